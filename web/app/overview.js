// overview.js - every GPU as two bars split into its slices (compute share, memory limit with
// the memory in use inside), a legend that is also the bars' text equivalent, an hour of
// history per GPU (uPlot), and the queues' lengths.

import uPlot from '../vendor/uplot-1.6.32/uPlot.esm.js';
import { h, clear, bytes, gpuOf, colourOf, pct, busy } from './util.js';
import { history, WINDOW_MS } from './history.js';

export function mount(ctx, store) {
  ctx.title = 'Overview';
  ctx.cards = new Map(); // uuid -> {el, body, chart, chartBox, caption, ro}
  ctx.summary = h('dl', { class: 'stats', 'aria-label': 'Summary' });
  ctx.grid = h('div', { class: 'gpus' });
  ctx.queues = h('div', {});
  ctx.root.append(
    h('h1', {}, 'Overview'),
    ctx.summary,
    h('h2', {}, 'GPUs'),
    ctx.grid,
    h('h2', {}, 'Queues'),
    ctx.queues);
  // The charts take their colours from the CSS variables: redraw them when the scheme flips.
  ctx.scheme = matchMedia('(prefers-color-scheme: dark)');
  ctx.onScheme = () => {
    for (const c of ctx.cards.values()) { c.ro?.disconnect(); c.chart?.destroy(); c.chart = null; clear(c.chartBox); }
    for (const g of store.gpus) { const c = ctx.cards.get(g.uuid); if (c) makeChart(c, g); }
  };
  ctx.scheme.addEventListener('change', ctx.onScheme);
  update(ctx, store);
}

export function unmount(ctx) {
  ctx.scheme.removeEventListener('change', ctx.onScheme);
  for (const c of ctx.cards.values()) { c.ro?.disconnect(); c.chart?.destroy(); }
  ctx.cards.clear();
}

function stat(label, value, extra) {
  return [h('div', {}, h('dt', {}, label), h('dd', {}, value, extra ? h('span', { class: 'sub' }, extra) : null))];
}

export function update(ctx, store) {
  const gpus = store.gpus;
  const jobs = [...store.jobs.values()];
  const running = jobs.filter((j) => j.state === 'running' || j.state === 'suspended').length;
  const pending = store.queues.reduce((n, q) => n + (q.pending || 0), 0);
  const milli = gpus.reduce((n, g) => n + g.allocated_milli, 0);
  const memAlloc = gpus.reduce((n, g) => n + g.allocated_mem, 0);
  const memTotal = gpus.reduce((n, g) => n + g.memory_total, 0);
  const memUsed = gpus.reduce((n, g) => n + g.used_mem, 0);
  const sim = gpus.some((g) => g.simulated);
  clear(ctx.summary,
    stat('GPUs', [String(gpus.length), sim ? h('span', { class: 'badge sim' }, 'simulated') : null]),
    stat('Compute allocated', `${gpuOf(milli)} of ${gpus.length} GPU${gpus.length === 1 ? '' : 's'}`),
    stat('GPU memory', `${bytes(memAlloc)} allocated`, `${bytes(memUsed)} in use · ${bytes(memTotal)} total`),
    stat('Running jobs', String(running)),
    stat('Queued', h('a', { href: '#/jobs?state=pending' }, `${pending} job${pending === 1 ? '' : 's'}`)));

  if (gpus.length === 0) {
    clear(ctx.grid, h('p', { class: 'empty' }, 'This machine has no GPU that tesseld can use (start it with --fake-gpus to simulate some).'));
  }
  const seen = new Set();
  for (const g of gpus) {
    seen.add(g.uuid);
    let c = ctx.cards.get(g.uuid);
    if (!c) { c = makeCard(g); ctx.cards.set(g.uuid, c); ctx.grid.append(c.el); }
    fillCard(c, g, store);
  }
  for (const [uuid, c] of ctx.cards) {
    if (!seen.has(uuid)) { c.ro?.disconnect(); c.chart?.destroy(); c.el.remove(); ctx.cards.delete(uuid); }
  }
  renderQueues(ctx.queues, store);
}

function makeCard(g) {
  const body = h('div', {});
  const chartBox = h('div', { class: 'chart' });
  const caption = h('figcaption', { class: 'sub' });
  const el = h('section', { class: 'card gpu', 'aria-labelledby': `gpu-${g.index}-title`, 'data-gpu': g.index },
    h('h3', { id: `gpu-${g.index}-title` }, `GPU ${g.index} · ${g.name}`,
      g.simulated ? h('span', { class: 'badge sim', title: 'a simulated GPU (tesseld --fake-gpus)' }, 'simulated') : null),
    body,
    h('figure', { class: 'history' }, chartBox, caption));
  const c = { el, body, chartBox, caption, chart: null, ro: null };
  // The chart needs a laid-out width: create it on the next frame.
  requestAnimationFrame(() => makeChart(c, g));
  return c;
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function makeChart(c, g) {
  if (!c.el.isConnected) return;
  const fg = cssVar('--muted'), grid = cssVar('--grid');
  const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const opts = {
    width: Math.max(200, c.chartBox.clientWidth),
    height: 130,
    cursor: { drag: { x: false, y: false } },
    legend: { show: true, live: true },
    scales: { x: { time: true }, y: { range: [0, 100] } },
    axes: [{ ...axis, space: 60 }, { ...axis, size: 50, values: (u, v) => v.map((x) => x + '%') }],
    series: [
      {},
      { label: 'Busy', stroke: cssVar('--c-util'), width: 1.5, value: (u, v) => (v == null ? '—' : Math.round(v) + '%') },
      { label: 'Memory in use', stroke: cssVar('--c-mem'), width: 1.5, value: (u, v) => (v == null ? '—' : v.toFixed(1) + '%') },
      { label: 'Compute allocated', stroke: cssVar('--c-compute'), width: 1.5, dash: [4, 3], value: (u, v) => (v == null ? '—' : Math.round(v) + '%') },
    ],
  };
  c.chart = new uPlot(opts, data(g), c.chartBox);
  c.ro = new ResizeObserver(() => {
    const w = c.chartBox.clientWidth;
    if (w > 0 && c.chart && Math.abs(w - c.chart.width) > 2) c.chart.setSize({ width: w, height: 130 });
  });
  c.ro.observe(c.chartBox);
}

// The x axis spans what was collected, at least MIN_SPAN_S (so that a fresh chart does not
// stretch three samples across its width) and at most the hour kept.
const MIN_SPAN_S = 300;
function data(g) {
  const s = history.series(g.uuid);
  const now = Date.now() / 1000;
  const from = Math.max(now - WINDOW_MS / 1000, Math.min(s.t[0] ?? now, now - MIN_SPAN_S));
  if (!s.t.length) return [[from, now], [null, null], [null, null], [null, null]];
  return [[from, ...s.t], [null, ...s.util], [null, ...s.mem], [null, ...s.compute]];
}

function bar(label, segments, summary) {
  // segments: [{width: 0..1, colour, title, inner: 0..1 (memory in use inside the slice)}]
  return h('div', { class: 'bar', role: 'img', 'aria-label': `${label}: ${summary}` },
    segments.map((s) => h('span', {
      class: 'seg', title: s.title,
      style: { width: `${Math.max(0, Math.min(100, s.width * 100))}%`, background: s.colour },
    }, s.inner !== undefined ? h('span', { class: 'used', style: { width: `${Math.min(100, s.inner * 100)}%`, background: s.innerColour } }) : null)));
}

function fillCard(c, g, store) {
  const slices = g.slices || [];
  const util = g.utilization;
  const computeSummary = `${gpuOf(g.allocated_milli)} of 1 GPU allocated to ${slices.length} slice${slices.length === 1 ? '' : 's'}`
    + slices.map((s) => `; job ${s.job_id} (${s.user}) ${gpuOf(s.milli)}`).join('');
  const memSummary = `${bytes(g.allocated_mem)} of ${bytes(g.memory_total)} allocated, ${bytes(g.used_mem)} in use`
    + slices.map((s) => `; job ${s.job_id} (${s.user}) ${bytes(s.mem_used)} of ${bytes(s.mem_limit)}`).join('');
  const legend = slices.length === 0
    ? h('p', { class: 'empty' }, 'Idle: no slice on this GPU.')
    : h('table', { class: 'slices' },
      h('caption', { class: 'sr-only' }, `Slices on GPU ${g.index}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Job'), h('th', { scope: 'col' }, 'User'),
        h('th', { scope: 'col', class: 'num' }, 'Compute'), h('th', { scope: 'col', class: 'num' }, 'Busy time'),
        h('th', { scope: 'col', class: 'num' }, 'Memory used / limit'))),
      h('tbody', {}, slices.map((s) => {
        const j = store.jobs.get(s.job_id);
        return h('tr', {},
          h('td', {}, h('span', { class: 'swatch', style: { background: colourOf(s.job_id) }, 'aria-hidden': 'true' }),
            h('a', { href: `#/jobs/${s.job_id}` }, `#${s.job_id}`), j?.name ? ` ${j.name}` : ''),
          h('td', {}, s.user),
          h('td', { class: 'num' }, gpuOf(s.milli)),
          // Device time the slice's kernels have used (busy_ms); a suspended slice says so.
          h('td', { class: 'num', 'data-col': 'busy', title: 'GPU time used by the job\'s kernels since it started' },
            busy(s.busy_ms), s.suspended ? [' ', h('span', { class: 'badge st-suspended' }, 'suspended')] : null),
          h('td', { class: 'num' }, `${bytes(s.mem_used)} / ${bytes(s.mem_limit)}`));
      })));
  clear(c.body,
    h('p', { class: 'sub gpu-meta' },
      h('span', {}, util === null || util === undefined ? 'utilisation unknown' : `${util}% busy`),
      ' · ', bytes(g.memory_total), ' · ', `${g.sm_count} SMs`, ' · ', h('code', { title: g.uuid }, shortUuid(g.uuid))),
    h('div', { class: 'barrow' },
      h('span', { class: 'barlabel' }, 'Compute'),
      bar(`GPU ${g.index} compute`, slices.map((s) => ({
        width: s.milli / 1000, colour: colourOf(s.job_id), title: `job ${s.job_id} (${s.user}): ${gpuOf(s.milli)} GPU`,
      })), computeSummary),
      h('span', { class: 'barval' }, `${gpuOf(g.allocated_milli)} / 1`)),
    h('div', { class: 'barrow' },
      h('span', { class: 'barlabel' }, 'Memory'),
      bar(`GPU ${g.index} memory`, slices.map((s) => ({
        // The slice's limit in a light shade, the memory it uses inside in the full colour.
        width: s.mem_limit / g.memory_total, colour: colourOf(s.job_id) + '55', innerColour: colourOf(s.job_id),
        inner: s.mem_limit ? s.mem_used / s.mem_limit : 0,
        title: `job ${s.job_id} (${s.user}): ${bytes(s.mem_used)} used of ${bytes(s.mem_limit)}`,
      })), memSummary),
      h('span', { class: 'barval' }, `${pct(g.allocated_mem / g.memory_total)}`)),
    slices.length ? h('p', { class: 'barkey', 'aria-hidden': 'true' },
      h('span', {}, h('i', { class: 'lim' }), 'limit'), h('span', {}, h('i', {}), 'in use')) : null,
    legend);
  if (c.chart) c.chart.setData(data(g));
  const s = history.series(g.uuid);
  const utilVals = s.util.filter((v) => v !== null);
  const mins = s.t.length ? Math.max(1, Math.round((s.t[s.t.length - 1] - s.t[0]) / 60)) : 0;
  c.caption.textContent = s.t.length < 2
    ? 'History: collected while this console is open (up to an hour).'
    : `Last ${mins} min (collected while the console is open): busy ${utilVals.length ? `peak ${Math.max(...utilVals)}%` : 'unknown'}, memory in use peak ${Math.max(...s.mem).toFixed(1)}%, compute allocated peak ${Math.max(...s.compute).toFixed(0)}%.`;
}

function shortUuid(u) {
  return u && u.length > 16 ? u.slice(0, 12) + '…' : u;
}

function renderQueues(el, store) {
  if (!store.queues.length) { clear(el, h('p', { class: 'empty' }, 'No queue.')); return; }
  clear(el, h('table', { class: 'data compact' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Queue'), h('th', { scope: 'col', class: 'num' }, 'Pending'),
      h('th', { scope: 'col', class: 'num' }, 'Running'))),
    h('tbody', {}, store.queues.map((q) => h('tr', {},
      h('td', { 'data-label': 'Queue' }, h('a', { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, q.name)),
      h('td', { class: 'num', 'data-label': 'Pending' }, String(q.pending ?? 0)),
      h('td', { class: 'num', 'data-label': 'Running' }, String(q.running ?? 0)))))));
}
