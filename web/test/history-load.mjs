// history-load.mjs - for bench/history/run.sh: how long the console takes, from a fresh page
// load (navigation start, the token already in the tab's sessionStorage), to draw the week
// view of every GPU (each GPU chart holding the week's points) and of the queues and
// users.  Prints one line per run, "load N: mark M ms, drawn D ms", and the median.
//
//   TESSEL_URL, TESSEL_ADMIN, RUNS (default 5), CHROMIUM, WARMUP (the warm-up load's hash,
//   default the week view itself; "#/jobs" leaves tesseld's kept history answers cold for the
//   first counted load), REVISIT=1 (a returning visitor: one browser profile for every load,
//   so its HTTP cache revalidates the files (304) and their compiled code is kept; each load
//   is a new tab), SWITCH=1 (the in-app switch: the overview loaded fresh at the hour and
//   drawn, then a click on Week; the time from the click to every chart holding the week),
//   FLOOR=1 (the floor under any page: the same fresh load of tesseld's icon, a 316-byte
//   document with no script, navigation start to its load event)

import { launch } from './chromium.mjs';
import { readdirSync, readFileSync } from 'node:fs';

const URL = process.env.TESSEL_URL;
const ADMIN = process.env.TESSEL_ADMIN;
const RUNS = Number(process.env.RUNS || 5);
const browser = await launch();
const drawn = [], marks = [], cpus = [], noticed = [];
// The CPU time (user + system, ms) that this browser's processes (those under this program:
// the browser, its zygotes, renderers and utilities; not another program's Chromium) have used
// so far, from /proc: each load's share of it is printed beside its wall time, a figure that
// other work on the same cores inflates far less than the wall time.
const TICK_MS = 10; // USER_HZ, 100 on Linux
function chromiumCpu() {
  const procs = new Map(); // pid -> [ppid, ticks]
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      procs.set(Number(p), [Number(f[1]), Number(f[11]) + Number(f[12])]);
    } catch { /* the process ended meanwhile */ }
  }
  const mine = new Set([process.pid]);
  let ticks = 0, grew = true;
  while (grew) {
    grew = false;
    for (const [pid, [ppid, t]] of procs) {
      if (mine.has(pid) || !mine.has(ppid)) continue;
      mine.add(pid);
      ticks += t;
      grew = true;
    }
  }
  return ticks * TICK_MS;
}
const REVISIT = process.env.REVISIT === '1';
const SWITCH = process.env.SWITCH === '1';
const FLOOR = process.env.FLOOR === '1';
// Every GPU chart and both usage charts drawn with the range's points: charts on a shared canvas
// (chart.js Sheet) say how many points they drew (data-drawn, set when the draw is done, each
// draw synchronous); the console of an older tree (bench/history/console-ab.sh) drew each chart
// on a canvas of its own inside its box, in the same task as it got its data.
// The check runs in the page at each animation frame (polling: 'raf'); the first frame that
// finds every chart drawn notes its time in the page (window.__tesselDrawnAt[key]), which is the
// figure: the harness's own round trip to learn it (a CDP call, a few ms, more on a loaded
// machine) is not the console's time.
const allDrawn = (key) => {
  const cards = [...document.querySelectorAll('section.gpu .chart')];
  const usage = [...document.querySelectorAll('.chart[data-scope]')];
  const drawn = (c) => (c.dataset.drawn !== undefined ? c.dataset.drawn === c.dataset.points : c.querySelector('canvas') !== null);
  const done = cards.length > 0 && cards.every((c) => c.dataset.range === key && Number(c.dataset.points) > 0 && drawn(c))
    && usage.every((c) => c.dataset.range === key && drawn(c));
  if (done) {
    window.__tesselDrawnAt = window.__tesselDrawnAt || {};
    window.__tesselDrawnAt[key] ??= performance.now();
  }
  return done;
};
const newContext = async () => {
  const c = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await c.addInitScript((t) => sessionStorage.setItem('tessel.token', t), ADMIN);
  return c;
};
const shared = REVISIT ? await newContext() : null;
try {
  for (let i = 0; i <= RUNS; i++) {
    // A new context each time (no HTTP cache, nothing stored but the token), or a new tab of
    // the returning visitor's.
    const context = shared || await newContext();
    const page = await context.newPage();
    if (i === 0 && process.env.WARMUP) {
      await page.goto(URL + '/' + process.env.WARMUP, { timeout: 120000 });
      await page.waitForSelector('main h1', { timeout: 60000 });
      await (shared ? page.close() : context.close());
      continue;
    }
    if (FLOOR) {
      await page.goto(URL + '/app/icon.svg', { timeout: 120000, waitUntil: 'load' });
      const t = await page.evaluate(() => performance.getEntriesByType('navigation')[0].loadEventEnd);
      console.log(`load ${i}${i === 0 ? ' (warm-up, not counted)' : ''}: the icon loaded ${t.toFixed(0)} ms`);
      if (i > 0) drawn.push(t);
      await context.close();
      continue;
    }
    let clicked = 0, cpu0 = chromiumCpu();
    if (SWITCH) {
      await page.goto(URL + '/#/', { timeout: 120000 });
      await page.waitForFunction(allDrawn, 'hour', { polling: 'raf', timeout: 60000 });
      // The click's time as the page sees it, taken in the page's own click handler's task.
      clicked = await page.evaluate(() => new Promise((resolve) => {
        const b = document.querySelector('.ranges button[data-range="week"]');
        b.addEventListener('click', () => resolve(performance.now()), { once: true, capture: true });
        b.click();
      }));
      cpu0 = chromiumCpu();
    } else {
      await page.goto(URL + '/#/?range=week', { timeout: 120000 });
    }
    await page.waitForFunction(allDrawn, 'week', { polling: 'raf', timeout: 60000 });
    const cpu = chromiumCpu() - cpu0;
    const t0 = clicked;
    const t = await page.evaluate((t0) => ({
      drawn: window.__tesselDrawnAt.week - t0,
      noticed: performance.now() - t0,
      mark: (performance.getEntriesByName('tessel-history-week')[0]?.startTime ?? NaN) - t0,
      points: [...document.querySelectorAll('section.gpu .chart')].map((c) => Number(c.dataset.points)).reduce((a, b) => a + b, 0),
    }), t0);
    // The first load warms Chromium itself (its process start, the font cache): not counted.
    console.log(`load ${i}${i === 0 ? ' (warm-up, not counted)' : ''}: data drawn (mark) ${t.mark.toFixed(0)} ms, all charts drawn ${t.drawn.toFixed(0)} ms (the harness knew at ${t.noticed.toFixed(0)}), ${t.points} GPU points, Chromium's CPU ${cpu} ms`);
    if (i > 0) { drawn.push(t.drawn); marks.push(t.mark); cpus.push(cpu); noticed.push(t.noticed); }
    await (shared ? page.close() : context.close());
  }
} finally {
  await shared?.close();
  await browser.close();
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
if (FLOOR) {
  console.log(`floor, a fresh load of a document with no script (the icon): median of ${RUNS}: ${median(drawn).toFixed(0)} ms`);
  process.exit(0);
}
console.log(`median of ${RUNS}: data drawn ${median(marks).toFixed(0)} ms, all charts drawn ${median(drawn).toFixed(0)} ms (the harness knew at ${median(noticed).toFixed(0)}), Chromium's CPU ${median(cpus)} ms`);
console.log(`week view, ${SWITCH ? 'in-app switch (click on Week to every chart drawn)' : REVISIT ? 'returning visitor' : 'fresh load'}: ${median(drawn).toFixed(0)} ms against a budget of 300 ms: ${median(drawn) < 300 ? 'met' : 'NOT met'} (ratio ${(median(drawn) / 300).toFixed(2)})`);
