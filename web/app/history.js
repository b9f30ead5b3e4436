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
// The columns each scope's charts draw (GET /v1/history?fields=; "t" always comes): a week of 8
// GPUs is 0.30 MB of JSON instead of 0.47 MB, the queues' and users' weeks a quarter of theirs,
// which the browser decodes and parses on the page's main thread before it can draw.
const FIELDS = { gpu: 'samples,idle,busy,mem_used,milli', queue: 'milli', user: 'milli' };

const cache = new Map(); // "scope/range" -> {at, data, pending, error}

// The answer for scope and range, from the cache when fresh; resolves to the API's object.
// Throws ApiError (e.g. 400 when the range is longer than what tesseld keeps).
export async function load(scope, range, { force = false } = {}) {
  const key = `${scope}/${range}`;
  const c = cache.get(key);
  const now = Date.now();
  if (c?.pending) return c.pending;
  if (c?.data && !force && now - c.at < Math.max(MIN_AGE_MS, c.data.step * 1000)) return c.data;
  const pending = request('GET', `/v1/history?scope=${scope}&range=${range}&fields=${FIELDS[scope]}`).then(
    (data) => { cache.set(key, { at: Date.now(), data }); return data; },
    (e) => { cache.delete(key); throw e; });
  cache.set(key, { ...c, pending });
  return pending;
}

// The answer already in for scope and range (fresh or not), else null: a page that has it can
// draw at once, in the task that builds it, rather than after another turn of the event loop.
export function peek(scope, range) {
  return cache.get(`${scope}/${range}`)?.data || null;
}

// At sign-in, before the first poll: ask for the overview's range (from the URL) at once, so
// that the answers are on their way while the console starts (load() shares the request).
// Resolves when every answer (or its error) is in; null on another page than the overview.
export function prefetch() {
  const m = /[?&]range=(\w+)/.exec(location.hash);
  const r = RANGES.find((x) => x.key === m?.[1]) || RANGES[0];
  if (!/^#?\/?(\?|$)/.test(location.hash)) return null;
  return Promise.allSettled(['gpu', 'queue', 'user'].map((scope) => load(scope, r.range)));
}

// Forget every answer (sign-out: the next person may not read the same users).
export function forget() {
  cache.clear();
}

// The chart's columns for one series: x = t, then per figure its values in typed arrays (the
// charts read them point by point at each draw); a point where the GPU was idle throughout has
// busy NaN (a gap, never 0 %), and idle gives the band drawn under it (NaN: none).
export function gpuColumns(answer, s, memTotal) {
  const total = memTotal || 1;
  const t = s ? s.t : [];
  const n = t.length;
  const busy = new Float64Array(n), idle = new Float64Array(n), mem = new Float64Array(n), compute = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    busy[i] = s.busy[i] ?? NaN;
    idle[i] = s.idle[i] > 0 ? 100 * s.idle[i] : NaN;
    mem[i] = (100 * s.mem_used[i]) / total;
    compute[i] = s.milli[i] / 10;
  }
  return { t, busy, idle, mem, compute };
}
