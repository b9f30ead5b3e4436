// history.js - the usage history that tesseld keeps (GET /v1/history, docs/api.md): per GPU,
// queue or user, for the last hour, day or week, at the resolution tesseld picks for the range
// (10 s, 1-minute or 10-minute points by default).  A fresh page shows the whole range at once;
// nothing is kept in the browser.
//
// One answer per (scope, range) is cached and asked again once it is older than its step (at
// least MIN_AGE_MS): the hour's 10 s points move every 10 s, the week's every 10 minutes.

import { request } from './api.js';

export const RANGES = [
  { key: 'hour', range: '1h', label: 'Hour' },
  { key: 'day', range: '1d', label: 'Day' },
  { key: 'week', range: '1w', label: 'Week' },
];
const MIN_AGE_MS = 10000;

const cache = new Map(); // "scope/range" -> {at, data, pending, error}

// The answer for scope and range, from the cache when fresh; resolves to the API's object.
// Throws ApiError (e.g. 400 when the range is longer than what tesseld keeps).
export async function load(scope, range, { force = false } = {}) {
  const key = `${scope}/${range}`;
  const c = cache.get(key);
  const now = Date.now();
  if (c?.pending) return c.pending;
  if (c?.data && !force && now - c.at < Math.max(MIN_AGE_MS, c.data.step * 1000)) return c.data;
  const pending = request('GET', `/v1/history?scope=${scope}&range=${range}`).then(
    (data) => { cache.set(key, { at: Date.now(), data }); return data; },
    (e) => { cache.delete(key); throw e; });
  cache.set(key, { ...c, pending });
  return pending;
}

// At sign-in, before the first poll: ask for the overview's range (from the URL) at once, so
// that the answers are on their way while the console starts (load() shares the request).
export function prefetch() {
  const m = /[?&]range=(\w+)/.exec(location.hash);
  const r = RANGES.find((x) => x.key === m?.[1]) || RANGES[0];
  if (!/^#?\/?(\?|$)/.test(location.hash)) return; // another page than the overview
  for (const scope of ['gpu', 'queue', 'user']) load(scope, r.range).catch(() => {});
}

// Forget every answer (sign-out: the next person may not read the same users).
export function forget() {
  cache.clear();
}

// The chart's columns for one series: x = t, then per figure its values; a point where the GPU was
// idle throughout has busy null (a gap, never 0 %), and idle gives the band drawn under it.
export function gpuColumns(answer, s, memTotal) {
  const total = memTotal || 1;
  const t = s ? s.t : [];
  return {
    t,
    busy: t.map((_, i) => s.busy[i]),
    idle: t.map((_, i) => (s.idle[i] > 0 ? 100 * s.idle[i] : null)),
    mem: t.map((_, i) => (100 * s.mem_used[i]) / total),
    compute: t.map((_, i) => s.milli[i] / 10),
  };
}
