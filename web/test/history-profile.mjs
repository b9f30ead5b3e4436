// history-profile.mjs - a profile (not a benchmark: no budget, no baseline) of the console's
// fresh load of the week view, the load that bench/history/run.sh times: where the renderer's
// main thread spends the time from navigation start to every chart drawn.  For each of RUNS
// fresh loads (a new browser profile each, after one warm-up load that is not counted) it
// records a Chromium trace (devtools.timeline, V8 and the sampling profiler, through
// playwright's browser.startTracing) and prints:
//   - the renderer main thread's time in that window by category, self time (an event's time
//     less the events nested in it): HTML parse, CSS parse, style, layout, paint and commit,
//     script compile, script run, garbage collection, other tasks, and idle (waiting on the
//     network or the next frame);
//   - script by function (self time from the sampling profiler, the top TOP functions);
//   - each request's start and end (the module graph's round trips, the API's answers).
// Then the same categories averaged over the counted loads.
//
//   TESSEL_URL=... TESSEL_ADMIN=... [RUNS=3] [TOP=12] [HASH='#/?range=week'] node web/test/history-profile.mjs
// bench/history/run.sh's tesseld (or any with a week of history); docs/console.md.

import { launch } from './chromium.mjs';

const URL = process.env.TESSEL_URL;
const ADMIN = process.env.TESSEL_ADMIN;
const RUNS = Number(process.env.RUNS || 3);
const TOP = Number(process.env.TOP || 12);
const HASH = process.env.HASH || '#/?range=week';
if (!URL || !ADMIN) {
  console.error('history-profile.mjs: set TESSEL_URL and TESSEL_ADMIN');
  process.exit(2);
}

// Every GPU chart and both usage charts drawn (as web/test/history-load.mjs checks); the first
// animation frame that finds them leaves a mark in the trace.
const allDrawn = () => {
  const cards = [...document.querySelectorAll('section.gpu .chart')];
  const usage = [...document.querySelectorAll('.chart[data-scope]')];
  const drawn = (c) => (c.dataset.drawn !== undefined ? c.dataset.drawn === c.dataset.points : c.querySelector('canvas') !== null);
  const done = cards.length > 0 && cards.every((c) => Number(c.dataset.points) > 0 && drawn(c)) && usage.every(drawn);
  if (done && !performance.getEntriesByName('profile-all-drawn').length) performance.mark('profile-all-drawn');
  return done;
};

// Trace event names (renderer main thread) by category, first match wins (self time goes to the
// innermost event, so the wrappers' names matter little).
const CATEGORY = [
  [/CpuProfiler|Tracing|TraceLog/, 'profiler overhead (tracing only)'],
  [/GC|Gc|Sweep|Scavenge|MarkCompact|BlinkGC|Oilpan/, 'garbage collection'],
  [/[Cc]ompile|V8\.Parse|v8\.parse|PreParse|ParseScript|ParseFunction|ParseProgram|deserialize|Streaming/, 'script compile'],
  [/ParseAuthorStyleSheet|CSSParser|StyleSheetContents|CSSStyleSheet|StyleRule/, 'CSS parse'],
  [/HTMLDocumentParser|ParseHTML|DocumentParser|HTMLTreeBuilder|HTMLParser|HTMLToken/, 'HTML parse'],
  [/Navigation|DocumentLoader|LocalWindowProxy|CreateContext|WindowProxy|FrameLoader|Document::Initialize|Document::Shutdown|unload/i, 'document commit and window set-up'],
  [/Style|UpdateLayoutTree|RecalcStyle/, 'style'],
  [/[Ll]ayout/, 'layout'],
  [/Paint|Canvas|Commit|Raster|Layer|Lifecycle|BeginMainFrame|Image|Composit|Frame|Draw/, 'paint, canvas and commit'],
  [/FunctionCall|EvaluateScript|evaluateModule|v8\.run|V8\.Execute|TimerFire|EventDispatch|Microtask|callFunction|InvokeApi|HandleInterrupts|StackGuard|^V8\.|^v8\./, 'script run'],
  [/Resource|mojo|Loader|Fetch|Preload|Response|Blob|Network|URL/, 'network and IPC'],
];
const categoryOf = (name) => (CATEGORY.find(([re]) => re.test(name)) || [null, 'other tasks'])[1];

function analyse(events, label) {
  // The renderer whose main thread left the marks.
  const threads = new Map(); // "pid:tid" -> name
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') threads.set(`${e.pid}:${e.tid}`, e.args.name);
  const marks = events.filter((e) => e.cat?.includes('blink.user_timing') && (e.name === 'profile-all-drawn' || e.name === 'navigationStart' || e.name === 'tessel-history-week'));
  const done = marks.find((e) => e.name === 'profile-all-drawn');
  if (!done) throw new Error(`${label}: no profile-all-drawn mark in the trace`);
  const nav = marks.filter((e) => e.name === 'navigationStart' && e.pid === done.pid && e.ts <= done.ts
    && e.args?.data?.documentLoaderURL?.startsWith(URL)).pop();
  if (!nav) throw new Error(`${label}: no navigationStart before the charts were drawn`);
  const main = [...threads].find(([k, n]) => n === 'CrRendererMain' && k.startsWith(`${done.pid}:`));
  const [pid, tid] = main[0].split(':').map(Number);
  const t0 = nav.ts, t1 = done.ts;
  const window = (t1 - t0) / 1000;
  // Complete events (X) and begin/end pairs (B/E) on that thread, as intervals, clipped.
  const spans = [];
  const open = [];
  for (const e of events) {
    if (e.pid !== pid || e.tid !== tid) continue;
    if (e.ph === 'X' && e.dur) spans.push({ name: e.name, s: e.ts, e: e.ts + e.dur });
    else if (e.ph === 'B') open.push(e);
    else if (e.ph === 'E') { const b = open.pop(); if (b) spans.push({ name: b.name, s: b.ts, e: e.ts }); }
  }
  spans.sort((a, b) => a.s - b.s || b.e - a.e);
  // Self time: walk the nesting with a stack; each span's time less its children's.
  const self = new Map();
  const stack = [];
  const clip = (s, e) => Math.max(0, Math.min(e, t1) - Math.max(s, t0));
  const give = (sp, us) => { if (us > 0) self.set(sp.name, (self.get(sp.name) || 0) + us); };
  const close = (sp) => give(sp, clip(sp.s, sp.e) - (sp.kids || 0));
  for (const sp of spans) {
    while (stack.length && stack[stack.length - 1].e <= sp.s) close(stack.pop());
    const parent = stack[stack.length - 1];
    if (parent) parent.kids = (parent.kids || 0) + clip(sp.s, Math.min(sp.e, parent.e));
    stack.push(sp);
  }
  while (stack.length) close(stack.pop());
  const byCat = new Map();
  let busy = 0;
  for (const [name, us] of self) {
    // RunTask and its kind are the scheduler's wrappers: their self time is the task's own work
    // outside any named event.
    const cat = /^(RunTask|ThreadControllerImpl::RunTask|ThreadPool_RunTask|SequenceManager)/.test(name) ? 'other tasks' : categoryOf(name);
    byCat.set(cat, (byCat.get(cat) || 0) + us / 1000);
    busy += us / 1000;
  }
  byCat.set('idle (network, frames)', Math.max(0, window - busy));
  // Script by function, from the sampling profiler's chunks of this thread.
  const nodes = new Map(); // id -> callFrame
  const fnTime = new Map();
  for (const e of events) {
    if (e.name !== 'ProfileChunk' || e.pid !== pid) continue;
    const c = e.args?.data?.cpuProfile;
    if (!c) continue;
    for (const n of c.nodes || []) nodes.set(n.id, n.callFrame);
    const deltas = e.args.data.timeDeltas || [];
    const samples = c.samples || [];
    let ts = e.ts; // the chunk's time; each sample's interval is its delta to the next
    for (let i = 0; i < samples.length; i++) {
      const d = deltas[i + 1] ?? deltas[i] ?? 0;
      const f = nodes.get(samples[i]);
      ts += deltas[i] || 0;
      if (!f || ts < t0 || ts > t1) continue;
      const url = (f.url || '').replace(/^.*\/app\//, 'app/');
      const key = f.functionName === '(idle)' || f.functionName === '(program)' || f.functionName === '(garbage collector)'
        ? f.functionName : `${f.functionName || '(anonymous)'} ${url ? `${url}:${f.lineNumber + 1}` : '(native)'}`;
      fnTime.set(key, (fnTime.get(key) || 0) + d / 1000);
    }
  }
  // Requests: the renderer's view of each (sent, finished), relative to navigation start.
  const reqs = new Map();
  for (const e of events) {
    const d = e.args?.data;
    if (!d?.requestId) continue;
    if (e.name === 'ResourceSendRequest') reqs.set(d.requestId, { url: d.url, s: e.ts });
    if (e.name === 'ResourceFinish' && reqs.has(d.requestId)) reqs.get(d.requestId).e = d.finishTime ? d.finishTime * 1e6 : e.ts;
  }
// The document's own finish time is on another clock (its request is the browser's): not shown.
  return { window, byCat, fnTime, reqs: [...reqs.values()].map((r) => ({ url: r.url.replace(URL, ''), s: (r.s - t0) / 1000, e: r.e >= r.s ? (r.e - t0) / 1000 : NaN })) };
}

const fmt = (ms) => ms.toFixed(1).padStart(7);
const browser = await launch();
const sums = new Map();
let windows = 0;
try {
  for (let i = 0; i <= RUNS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript((t) => sessionStorage.setItem('tessel.token', t), ADMIN);
    const page = await context.newPage();
    if (i > 0) {
      await browser.startTracing(page, {
        categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing', 'loading', 'v8', 'v8.execute',
          'disabled-by-default-v8.cpu_profiler', 'disabled-by-default-v8.gc', 'blink', 'cc', 'gpu', 'toplevel'],
      });
    }
    await page.goto(URL + '/' + HASH, { timeout: 120000 });
    await page.waitForFunction(allDrawn, null, { polling: 'raf', timeout: 60000 });
    if (i === 0) { await context.close(); continue; }
    const buf = await browser.stopTracing();
    await context.close();
    const { traceEvents } = JSON.parse(buf.toString());
    const r = analyse(traceEvents, `load ${i}`);
    windows += r.window;
    console.log(`== load ${i}: navigation start to every chart drawn ${r.window.toFixed(0)} ms (traced: slower than untraced)`);
    console.log('   renderer main thread, self time by category:');
    for (const [cat, ms] of [...r.byCat].sort((a, b) => b[1] - a[1])) {
      console.log(`   ${fmt(ms)} ms  ${(100 * ms / r.window).toFixed(0).padStart(3)} %  ${cat}`);
      sums.set(cat, (sums.get(cat) || 0) + ms);
    }
    console.log(`   script by function (sampling profiler, self time, top ${TOP}):`);
    for (const [fn, ms] of [...r.fnTime].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`   ${fmt(ms)} ms  ${fn}`);
    console.log('   requests (ms from navigation start: sent - finished):');
    for (const q of r.reqs.sort((a, b) => a.s - b.s)) console.log(`   ${fmt(q.s)} - ${fmt(q.e)}  ${q.url}`);
  }
} finally {
  await browser.close();
}
console.log(`== mean of ${RUNS} traced loads: ${(windows / RUNS).toFixed(0)} ms, renderer main thread by category:`);
for (const [cat, ms] of [...sums].sort((a, b) => b[1] - a[1])) console.log(`   ${fmt(ms / RUNS)} ms  ${(100 * ms / windows).toFixed(0).padStart(3)} %  ${cat}`);
