// overview.js - every GPU as two bars split into its slices (compute share, memory limit with
// the memory in use inside), a legend that is also the bars' text equivalent, the usage history
// per GPU for the last hour, day or week (chart.js, from GET /v1/history: a fresh page shows the
// whole range), the queues' lengths, and the GPU share in use per queue and per user over the
// same range.  Against tesseld --slurm the GPUs are the cluster's (GET /v1/gpus lists them node
// by node with "nodes"): each card names its node, a node that is not up says so on its cards
// with the time of its last figures, and a slice of a job submitted to Slurm directly is named by
// its Slurm id.

import { h, clear, bytes, gpuOf, colourOf, pct, busy } from './util.js';
import { load, peek, RANGES, gpuColumns } from './history.js';
import { Chart, Sheet, unionColumns } from './chart.js';

// A GPU's card: its node and UUID (two nodes may show the same UUID: simulated GPUs).
const keyOf = (g) => (g.node ? `${g.node}/${g.uuid}` : g.uuid);
// A slice's job: Tessel's id, or Slurm's for a job sbatch'd directly (job_id null).
const jobKey = (s) => (s.job_id ?? `s${s.slurm_id}`);
const jobName = (s) => (s.job_id !== null && s.job_id !== undefined ? `job ${s.job_id}` : `Slurm job ${s.slurm_id}`);
const jobColour = (s) => colourOf(s.job_id ?? s.slurm_id);

export function mount(ctx, store) {
  ctx.title = 'Overview';
  ctx.cards = new Map(); // uuid -> {el, body, chart, chartBox, caption, ro, cols}
  ctx.summary = h('dl', { class: 'stats', 'aria-label': 'Summary' });
  ctx.grid = h('div', { class: 'gpus' });
  ctx.queues = h('div', {});
  const want = ctx.route.params.get('range');
  ctx.range = RANGES.find((r) => r.key === want) || RANGES[0];
  ctx.hist = { gpu: null, queue: null, user: null };
  ctx.histErr = { gpu: null, queue: null, user: null };
  ctx.rangeButtons = RANGES.map((r) => {
    const b = h('button', { type: 'button', class: 'btn small', 'data-range': r.key, 'aria-pressed': String(r === ctx.range) }, r.label);
    b.addEventListener('click', () => setRange(ctx, store, r));
    return b;
  });
  ctx.histNote = h('p', { class: 'sub', role: 'status' });
  ctx.usage = { queue: makeUsage('queue', 'GPU share in use by queue'), user: makeUsage('user', store.admin ? 'GPU share in use by user' : 'Your GPU share in use') };
  const usageBox = h('div', { class: 'usage' }, ctx.usage.queue.el, ctx.usage.user.el);
  // One canvas for the GPU charts and one for the usage charts (chart.js Sheet), not one each.
  ctx.sheet = new Sheet(ctx.grid);
  ctx.usageSheet = new Sheet(usageBox);
  ctx.root.append(
    h('h1', {}, 'Overview'),
    ctx.summary,
    h('div', { class: 'gpuhead' },
      h('h2', {}, 'GPUs'),
      h('div', { class: 'ranges', role: 'group', 'aria-label': 'History shown: the last hour, day or week' }, ctx.rangeButtons)),
    ctx.histNote,
    ctx.grid,
    h('h2', {}, 'Queues'),
    ctx.queues,
    h('h2', {}, 'Usage history'),
    usageBox);
  // The charts take their colours from the CSS variables: redraw them when the scheme flips.
  ctx.scheme = matchMedia('(prefers-color-scheme: dark)');
  ctx.onScheme = () => {
    for (const c of ctx.cards.values()) { c.chart?.destroy(); c.chart = null; }
    const pal = palette();
    for (const u of Object.values(ctx.usage)) { u.chart?.destroy(); u.chart = null; u.names = ''; }
    Sheet.batch([ctx.sheet, ctx.usageSheet], () => {
      for (const g of store.gpus) { const c = ctx.cards.get(keyOf(g)); if (c) makeChart(ctx, c, g, pal); }
      drawUsage(ctx, store);
    });
  };
  ctx.scheme.addEventListener('change', ctx.onScheme);
  update(ctx, store);
}

export function unmount(ctx) {
  ctx.gone = true;
  ctx.scheme.removeEventListener('change', ctx.onScheme);
  for (const c of ctx.cards.values()) c.chart?.destroy();
  for (const u of Object.values(ctx.usage)) u.chart?.destroy();
  ctx.sheet.destroy();
  ctx.usageSheet.destroy();
  ctx.cards.clear();
}

function setRange(ctx, store, r) {
  if (r === ctx.range) return;
  ctx.range = r;
  ctx.hist = { gpu: null, queue: null, user: null };
  ctx.histErr = { gpu: null, queue: null, user: null };
  for (const b of ctx.rangeButtons) b.setAttribute('aria-pressed', String(b.dataset.range === r.key));
  window.history.replaceState(null, '', r === RANGES[0] ? '#/' : `#/?range=${r.key}`);
  ctx.rendered = false;
  refreshHistory(ctx, store);
}

const SCOPES = ['gpu', 'queue', 'user'];

// Ask for the range's history (cached by history.js) and, once every scope's answer (or error)
// is in, draw what it feeds in one go: every chart of both sheets placed by one layout and each
// drawn once, in one task, so that the first frame after it shows the whole range (drawing each
// scope as it came cost a layout, a canvas set-up and a frame per scope: docs/console.md,
// "Usage history: figures").
async function refreshHistory(ctx, store) {
  const r = ctx.range;
  const got = await Promise.all(SCOPES.map((scope) => load(scope, r.range).then((a) => [a, null], (e) => [null, e])));
  if (ctx.gone || r !== ctx.range) return;
  SCOPES.forEach((scope, i) => { [ctx.hist[scope], ctx.histErr[scope]] = got[i]; });
  drawHistory(ctx, store);
  const error = ctx.histErr.gpu || ctx.histErr.queue || ctx.histErr.user;
  ctx.histNote.textContent = error ? `History unavailable: ${error.message}` : '';
  if (!ctx.rendered && !error) {
    ctx.rendered = true;
    // For bench/history: the time from navigation start to the range's charts drawn.
    performance.mark(`tessel-history-${r.key}`);
    document.body.dataset.historyRendered = r.key;
  }
}

// The history's charts from ctx.hist: the GPUs' data and captions, then the charts not yet made
// and the usage charts, both sheets measured in one layout.
function drawHistory(ctx, store) {
  for (const g of store.gpus) { const c = ctx.cards.get(keyOf(g)); if (c) fillHistory(ctx, c, g); }
  Sheet.batch([ctx.sheet, ctx.usageSheet], () => { makeCharts(ctx); drawUsage(ctx, store); });
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
    store.nodes ? stat('Nodes', String(store.nodes.length),
      store.nodes.filter((n) => n.state !== 'up').map((n) => `${n.name} ${n.state}`).join(' · ') || 'all up') : null,
    stat('Running jobs', String(running)),
    stat('Queued', h('a', { href: '#/jobs?state=pending' }, `${pending} job${pending === 1 ? '' : 's'}`)));

  if (gpus.length === 0) {
    clear(ctx.grid, h('p', { class: 'empty' }, store.nodes
      ? 'No node of the cluster has told its GPUs yet (tessel-node-exporter runs on each node: docs/slurm-backend.md).'
      : 'This machine has no GPU that tesseld can use (start it with --fake-gpus to simulate some).'));
  }
  const seen = new Set();
  for (const g of gpus) {
    seen.add(keyOf(g));
    let c = ctx.cards.get(keyOf(g));
    if (!c) { c = makeCard(ctx, g); ctx.cards.set(keyOf(g), c); ctx.grid.append(c.el); }
    fillCard(c, g, store);
  }
  for (const [uuid, c] of ctx.cards) {
    if (!seen.has(uuid)) { c.chart?.destroy(); c.el.remove(); ctx.cards.delete(uuid); }
  }
  renderQueues(ctx.queues, store);
  // The range's answers already in (a fresh load asks for them while the console starts): the
  // charts are made now, with the cards, so that the page's first layout places them.
  if (!ctx.rendered && !ctx.hist.gpu) {
    const have = SCOPES.map((scope) => peek(scope, ctx.range.range));
    if (have.every(Boolean)) {
      SCOPES.forEach((scope, i) => { ctx.hist[scope] = have[i]; });
      drawHistory(ctx, store);
    }
  }
  refreshHistory(ctx, store);
}

function makeCard(ctx, g) {
  const body = h('div', {});
  const chartBox = h('div', { class: 'chart' });
  const caption = h('figcaption', { class: 'sub' });
  const id = `gpu-${g.node ? `${g.node}-` : ''}${g.index}-title`;
  const el = h('section', { class: 'card gpu', 'aria-labelledby': id, 'data-gpu': g.index, 'data-node': g.node || null },
    h('h3', { id }, `${g.node ? `${g.node} · ` : ''}GPU ${g.index} · ${g.name}`,
      g.simulated ? h('span', { class: 'badge sim', title: 'a simulated GPU (tesseld --fake-gpus)' }, 'simulated') : null),
    body,
    h('figure', { class: 'history' }, chartBox, caption));
  const c = { el, body, chartBox, caption, chart: null, cols: null };
  // The chart is made once the range's history is in (refreshHistory), with every other card's.
  (ctx.newCharts ||= []).push([c, g]);
  return c;
}

// The charts of the cards made since the last call, in one go, once the range's history (or its
// error) is in, so that each is drawn once, with its data: the sheet measures every chart's place
// in one layout and draws them all at the end of its batch; the colours are read once.
function makeCharts(ctx) {
  if (!ctx.newCharts?.length || !(ctx.hist.gpu || ctx.histErr.gpu)) return;
  const todo = ctx.newCharts.filter(([c]) => c.el.isConnected && !c.chart);
  ctx.newCharts = [];
  if (ctx.gone || !todo.length) return;
  const pal = palette();
  ctx.sheet.batch(() => todo.forEach(([c, g]) => makeChart(ctx, c, g, pal)));
}

// The chart colours from the CSS variables and the axes' font (one style read).
function palette() {
  const cs = getComputedStyle(document.documentElement);
  const v = (name) => cs.getPropertyValue(name).trim();
  return {
    muted: v('--muted'), grid: v('--grid'), idle: v('--c-idle'), util: v('--c-util'), mem: v('--c-mem'), compute: v('--c-compute'),
    font: `11px ${getComputedStyle(document.body).fontFamily}`,
  };
}

const percent = (v) => `${v}%`;
const round = (v) => `${Math.round(v)}%`;

function makeChart(ctx, c, g, pal) {
  if (!c.el.isConnected) return;
  c.chart = new Chart(c.chartBox, {
    sheet: ctx.sheet, height: 130, yMax: 100, yLabel: percent, pal, data: data(c),
    series: [
      // Idle: a light band over the part of each interval with no job on the GPU (the busy
      // line has a gap there, never a 0 %).
      { label: 'Idle', colour: pal.idle, band: true, value: round },
      { label: 'Busy', colour: pal.util, value: round },
      { label: 'Memory in use', colour: pal.mem, value: (v) => `${v.toFixed(1)}%` },
      { label: 'Compute allocated', colour: pal.compute, dash: [4, 3], value: round },
    ],
  });
}

// The x axis spans the whole range asked (a GPU without history yet shows an empty range).
function data(c) {
  const k = c.cols;
  if (!k) {
    const now = Date.now() / 1000;
    return { x: [], ys: [[], [], [], []], start: now - 3600, end: now, step: 10 };
  }
  return { x: k.t, ys: [k.idle, k.busy, k.mem, k.compute], start: k.start, end: k.end, step: k.step };
}

const STEP_WORDS = { 10: '10 s', 60: '1 min', 600: '10 min' };
function stepWords(s) {
  return STEP_WORDS[s] || (s % 60 ? `${s} s` : `${s / 60} min`);
}

// The GPU's series of the range: the chart's data, its caption, and data attributes that
// state what is drawn (points, idle points, busy points, busy peak) for tests and tools.
function fillHistory(ctx, c, g) {
  const a = ctx.hist.gpu;
  // The same answer (each poll asks history.js, which keeps it for its step): nothing to redraw.
  if (a && c.src === a && c.memTotal === g.memory_total) return;
  c.src = a;
  c.memTotal = g.memory_total;
  const s = a?.series.find((x) => x.name === g.uuid);
  c.cols = a ? { ...gpuColumns(a, s, g.memory_total), start: a.start, end: a.end, step: a.step } : null;
  if (c.chart) c.chart.setData(data(c));
  const k = c.cols;
  const words = ctx.range.label.toLowerCase();
  const d = c.chartBox.dataset;
  d.range = ctx.range.key;
  d.step = a ? String(a.step) : '';
  d.points = k ? String(k.t.length) : '0';
  if (!k || !k.t.length) {
    d.idlePoints = d.busyPoints = '0';
    d.busyPeak = '';
    c.caption.textContent = ctx.histErr.gpu ? 'History unavailable.' : `No history of this GPU in the last ${words} yet.`;
    return;
  }
  let busyN = 0, busyPeak = -Infinity, idleAll = 0, idleSum = 0, samples = 0, memPeak = -Infinity, computePeak = -Infinity;
  for (let i = 0; i < k.t.length; i++) {
    if (!Number.isNaN(k.busy[i])) { busyN++; if (k.busy[i] > busyPeak) busyPeak = k.busy[i]; }
    if (s.idle[i] >= 1) idleAll++;
    idleSum += s.idle[i] * s.samples[i];
    samples += s.samples[i];
    if (k.mem[i] > memPeak) memPeak = k.mem[i];
    if (k.compute[i] > computePeak) computePeak = k.compute[i];
  }
  const idleMean = idleSum / Math.max(1, samples);
  d.idlePoints = String(idleAll);
  d.busyPoints = String(busyN);
  d.busyPeak = busyN ? String(busyPeak) : '';
  const busyText = busyN
    ? `busy peak ${Math.round(busyPeak)}% while a job ran`
    : idleAll === k.t.length ? 'idle throughout (no job)' : 'busy unknown';
  c.caption.textContent = `Last ${words} (${stepWords(a.step)} points): ${busyText}, idle ${Math.round(100 * idleMean)}% of the time, `
    + `memory in use peak ${memPeak.toFixed(1)}%, compute allocated peak ${computePeak.toFixed(0)}%.`;
}

// A chart of the GPU share in use per queue or per user, one line per name.
function makeUsage(scope, title) {
  const box = h('div', { class: 'chart', 'data-scope': scope });
  const caption = h('figcaption', { class: 'sub' });
  const el = h('figure', { class: 'card history usagechart' }, h('h3', {}, title), box, caption);
  return { scope, el, box, caption, chart: null, names: '' };
}

function drawUsage(ctx, store) {
  const ngpus = Math.max(1, store.gpus.length);
  let pal = null;
  for (const u of Object.values(ctx.usage)) {
    const a = ctx.hist[u.scope];
    const d = u.box.dataset;
    d.range = ctx.range.key;
    if (!a) { u.caption.textContent = ctx.histErr[u.scope] ? 'History unavailable.' : ''; continue; }
    if (u.src === a && u.chart && u.ngpus === ngpus) continue; // drawn from this answer already
    u.src = a;
    u.ngpus = ngpus;
    // By name in code-point order: localeCompare's first call builds ICU's collator, 15-30 ms of
    // a fresh page's main thread for names that are Unix user and queue names.
    const series = [...a.series].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    // One x axis for every name: the union of their times; a name without a point at a time
    // had no job then (NaN: a gap).  GPUs, from milli-GPU.
    const { x: ts, ys: cols } = unionColumns(series, 'milli', 1000);
    const names = series.map((x) => x.name).join(',');
    let peak = 0;
    for (const col of cols) for (const v of col) if (v > peak) peak = v;
    d.step = String(a.step);
    d.series = names;
    d.points = String(ts.length);
    d.peak = String(peak);
    const rows = { x: ts, ys: cols, start: a.start, end: a.end, step: a.step };
    if (u.chart && (u.names !== names || u.chart.opts.yMax !== ngpus)) { u.chart.destroy(); u.chart = null; }
    if (!u.chart && u.box.isConnected) {
      u.chart = new Chart(u.box, {
        sheet: ctx.usageSheet, height: 150, yMax: ngpus, yLabel: String, pal: (pal ||= palette()), data: rows,
        series: series.map((x, i) => ({ label: x.name, colour: colourOf(i + 1), value: (v) => v.toFixed(2) })),
      });
      u.names = names;
    } else if (u.chart) {
      u.chart.setData(rows);
    }
    u.caption.textContent = series.length
      ? `GPUs in use over the last ${ctx.range.label.toLowerCase()} (${stepWords(a.step)} points), peak ${Number(d.peak).toFixed(2)} of ${ngpus}.`
      : `No ${u.scope === 'queue' ? 'queue' : 'job'} history in the last ${ctx.range.label.toLowerCase()}.`;
  }
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
    + slices.map((s) => `; ${jobName(s)} (${s.user}) ${gpuOf(s.milli)}`).join('');
  const memSummary = `${bytes(g.allocated_mem)} of ${bytes(g.memory_total)} allocated, ${bytes(g.used_mem)} in use`
    + slices.map((s) => `; ${jobName(s)} (${s.user}) ${bytes(s.mem_used)} of ${bytes(s.mem_limit)}`
      + (s.mem_oversubscribe_limit > 0 ? `, ${bytes(s.mem_oversubscribed || 0)} spilled to the host` : '')).join('');
  const legend = slices.length === 0
    ? h('p', { class: 'empty' }, 'Idle: no slice on this GPU.')
    : h('table', { class: 'slices' },
      h('caption', { class: 'sr-only' }, `Slices on GPU ${g.index}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Job'), h('th', { scope: 'col' }, 'User'),
        h('th', { scope: 'col', class: 'num' }, 'Compute'), h('th', { scope: 'col', class: 'num' }, 'Busy time'),
        h('th', { scope: 'col', class: 'num' }, 'Memory used / limit'))),
      h('tbody', {}, slices.map((s) => {
        const j = s.job_id !== null && s.job_id !== undefined ? store.jobs.get(s.job_id) : null;
        return h('tr', { 'data-job': jobKey(s) },
          h('td', {}, h('span', { class: 'swatch', style: { background: jobColour(s) }, 'aria-hidden': 'true' }),
            j || s.job_id ? h('a', { href: `#/jobs/${s.job_id}` }, `#${s.job_id}`)
              : h('span', { title: 'submitted to Slurm directly' }, `Slurm ${s.slurm_id}`), j?.name ? ` ${j.name}` : ''),
          h('td', {}, s.user),
          h('td', { class: 'num' }, gpuOf(s.milli)),
          // Device time the slice's kernels have used (busy_ms); a suspended slice says so.
          h('td', { class: 'num', 'data-col': 'busy', title: 'GPU time used by the job\'s kernels since it started' },
            busy(s.busy_ms), s.suspended ? [' ', h('span', { class: 'badge st-suspended' }, 'suspended')] : null),
          // Oversubscription (docs/interposer.md): bytes spilled past the limit into host memory.
          h('td', { class: 'num' }, `${bytes(s.mem_used)} / ${bytes(s.mem_limit)}`,
            s.mem_oversubscribe_limit > 0
              ? h('span', { class: 'spill', title: 'spilled past the limit into host memory (slow)' },
                ` + ${bytes(s.mem_oversubscribed || 0)} on the host (of ${bytes(s.mem_oversubscribe_limit)})`)
              : null));
      })));
  // A node that is not up (down or drained in Slurm, its exporter not answering): said on each
  // of its cards, with the time of the figures shown.
  const nodeState = g.node_state && g.node_state !== 'up'
    ? h('p', { class: 'sub node-state', 'data-node-state': g.node_state },
      h('span', { class: 'badge st-failed' }, `node ${g.node_state}`),
      g.figures_at ? ` figures of ${new Date(g.figures_at).toLocaleString()}` : '')
    : null;
  clear(c.body,
    nodeState,
    h('p', { class: 'sub gpu-meta' },
      // No job on the GPU: idle, whatever NVML's counter says (not "0 % busy").
      slices.length === 0 ? h('span', { class: 'idle', 'data-state': 'idle' }, 'idle')
        : h('span', { 'data-state': 'busy' }, util === null || util === undefined ? 'utilisation unknown' : `${util}% busy`),
      // The SM count when known (a cluster's nodes do not report it).
      ' · ', bytes(g.memory_total), g.sm_count ? [' · ', `${g.sm_count} SMs`] : null, ' · ',
      h('code', { title: g.uuid }, shortUuid(g.uuid))),
    h('div', { class: 'barrow' },
      h('span', { class: 'barlabel' }, 'Compute'),
      bar(`GPU ${g.index} compute`, slices.map((s) => ({
        width: s.milli / 1000, colour: jobColour(s), title: `${jobName(s)} (${s.user}): ${gpuOf(s.milli)} GPU`,
      })), computeSummary),
      h('span', { class: 'barval' }, `${gpuOf(g.allocated_milli)} / 1`)),
    h('div', { class: 'barrow' },
      h('span', { class: 'barlabel' }, 'Memory'),
      bar(`GPU ${g.index} memory`, slices.map((s) => ({
        // The slice's limit in a light shade, the memory it uses inside in the full colour.
        width: s.mem_limit / g.memory_total, colour: jobColour(s) + '55', innerColour: jobColour(s),
        inner: s.mem_limit ? s.mem_used / s.mem_limit : 0,
        title: `${jobName(s)} (${s.user}): ${bytes(s.mem_used)} used of ${bytes(s.mem_limit)}`,
      })), memSummary),
      h('span', { class: 'barval' }, `${pct(g.allocated_mem / g.memory_total)}`)),
    slices.length ? h('p', { class: 'barkey', 'aria-hidden': 'true' },
      h('span', {}, h('i', { class: 'lim' }), 'limit'), h('span', {}, h('i', {}), 'in use')) : null,
    legend);
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
