// history-ab.mjs - for bench/history/console-ab.sh (INTERLEAVE=1): fresh loads of the week view
// from two tesselds that differ only in their console's files (A: the baseline, B: this tree),
// interleaved load by load (A B, B A, ...; the first pair a warm-up, not counted), so that both
// see the same machine.  Per load: the wall time from navigation start to every chart holding
// the week (as history-load.mjs), the CPU time (user + system, /proc) of the renderers' main
// threads (a renderer process's first thread, where the page's script, style, layout and
// canvas drawing run) and of every Chromium process.  Prints the medians and B/A.
//
//   URL_A, TOK_A, URL_B, TOK_B, RUNS (default 10)
import { launch } from './chromium.mjs';
import { readdirSync, readFileSync } from 'node:fs';

const URL = { A: process.env.URL_A, B: process.env.URL_B };
const TOKEN = { A: process.env.TOK_A, B: process.env.TOK_B };
const RUNS = Number(process.env.RUNS || 10);
const TICK_MS = 10; // USER_HZ, 100 on Linux

// [renderer main threads, every Chromium thread] CPU ms so far, of this program's descendants.
function cpu() {
  const procs = new Map();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try { procs.set(p, Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1])); } catch { /* gone */ }
  }
  const mine = new Set([String(process.pid)]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, pp] of procs) if (!mine.has(p) && mine.has(String(pp))) { mine.add(p); grew = true; }
  }
  mine.delete(String(process.pid));
  let main = 0, all = 0;
  for (const p of mine) {
    try {
      const renderer = readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('--type=renderer');
      for (const t of readdirSync(`/proc/${p}/task`)) {
        const f = readFileSync(`/proc/${p}/task/${t}/stat`, 'utf8').split(') ')[1].split(' ');
        const ms = (Number(f[11]) + Number(f[12])) * TICK_MS;
        all += ms;
        if (renderer && t === p) main += ms;
      }
    } catch { /* the process ended meanwhile */ }
  }
  return [main, all];
}

// Every GPU chart and both usage charts hold the week (history-load.mjs's test, older trees too).
const allDrawn = () => {
  const cards = [...document.querySelectorAll('section.gpu .chart')];
  const usage = [...document.querySelectorAll('.chart[data-scope]')];
  const drawn = (c) => (c.dataset.drawn !== undefined ? c.dataset.drawn === c.dataset.points : c.querySelector('canvas') !== null);
  return cards.length > 0 && cards.every((c) => c.dataset.range === 'week' && Number(c.dataset.points) > 0 && drawn(c))
    && usage.every((c) => c.dataset.range === 'week' && drawn(c));
};

const browser = await launch();
const got = { A: [], B: [] };
try {
  for (let i = 0; i <= RUNS; i++) {
    for (const v of i % 2 ? ['A', 'B'] : ['B', 'A']) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.addInitScript((t) => sessionStorage.setItem('tessel.token', t), TOKEN[v]);
      const page = await context.newPage();
      const c0 = cpu();
      await page.goto(URL[v] + '/#/?range=week', { timeout: 120000 });
      await page.waitForFunction(allDrawn, null, { polling: 'raf', timeout: 60000 });
      const wall = await page.evaluate(() => performance.now());
      const c1 = cpu();
      if (i > 0) got[v].push([wall, c1[0] - c0[0], c1[1] - c0[1]]);
      await context.close();
    }
  }
} finally {
  await browser.close();
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const m = {};
for (const v of ['A', 'B']) {
  m[v] = [0, 1, 2].map((k) => median(got[v].map((r) => r[k])));
  console.log(`${v}: median of ${RUNS}: all charts drawn ${m[v][0].toFixed(0)} ms, renderer main thread CPU ${m[v][1]} ms, Chromium's CPU ${m[v][2]} ms`
    + ` (walls ${got[v].map((r) => r[0].toFixed(0)).join(' ')})`);
}
console.log(`B/A: all charts drawn ${(m.B[0] / m.A[0]).toFixed(2)}, renderer main thread CPU ${(m.B[1] / m.A[1]).toFixed(2)}, Chromium's CPU ${(m.B[2] / m.A[2]).toFixed(2)}`);
