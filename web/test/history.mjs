// history.mjs - the console's usage history after a fresh page load, in a real browser
// (Debian's Chromium, playwright-core), against a tesseld whose store was seeded with a week
// of past samples (tests/t/t7010-console-history.t).  Asserts what is drawn from the charts'
// data attributes and the DOM, never from pixels.
//
//   TESSEL_URL, TESSEL_ADMIN   the tesseld under test and its admin token
//   BUSY_GPU, IDLE_GPU         the index of the GPU seeded busy 40 % with a job, and of the one
//                              seeded idle throughout
//   BUSY_NOW                   the index of the GPU a job holds now (the other has none)
//   SHOTS                      directory for screenshots;  CHROMIUM  the browser
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const ADMIN = process.env.TESSEL_ADMIN;
const BUSY = process.env.BUSY_GPU;
const IDLE = process.env.IDLE_GPU;
const NOW = process.env.BUSY_NOW;
const SHOTS = process.env.SHOTS;
const WAIT_MS = 30000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
}

const browser = await launch();
const errors = [];
const chart = (g) => `section.gpu[data-gpu="${g}"] .chart`;
async function attrs(page, sel) {
  return page.evaluate((s) => ({ ...document.querySelector(s)?.dataset }), sel);
}
// Wait until the overview drew the range (history.js answered and the charts took the data).
async function drawn(page, key, step) {
  await page.waitForFunction(([k, st, b]) => {
    const d = document.querySelector(`section.gpu[data-gpu="${b}"] .chart`)?.dataset;
    return d && d.range === k && d.step === st && Number(d.points) > 0 && d.drawn === d.points;
  }, [key, String(step), BUSY], { timeout: WAIT_MS });
}

try {
  // A fresh browser: nothing stored, the token given at sign-in.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(URL + '/');
  await page.fill('#token', ADMIN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();

  // ---- the hour, at once --------------------------------------------------------------------------
  await drawn(page, 'hour', 10);
  let b = await attrs(page, chart(BUSY));
  let i = await attrs(page, chart(IDLE));
  check(Number(b.points) >= 300 && b.busyPeak === '40',
    `hour: GPU ${BUSY} shows the seeded hour at once (${b.points} points of 10 s, busy peak ${b.busyPeak} %)`, JSON.stringify(b));
  check(Number(i.points) >= 300 && i.busyPoints === '0' && i.idlePoints === i.points,
    `hour: GPU ${IDLE} is idle in every point (${i.idlePoints} of ${i.points}), with no busy figure`, JSON.stringify(i));
  const cap = await page.locator(`section.gpu[data-gpu="${IDLE}"] figcaption`).textContent();
  check(/idle throughout/.test(cap) && !/busy peak 0%/.test(cap), `hour: the idle GPU's caption says idle ("${cap}")`);
  check(await page.locator('.ranges button[aria-pressed="true"]').textContent() === 'Hour', 'hour: the Hour button is pressed');
  check(await page.evaluate(() => localStorage.getItem('tessel.gpu-history.v1') === null), 'nothing of the history is kept in localStorage');

  // Headers: the GPU with a job now says its busy figure; the other says idle, not "0% busy".
  const idleNow = NOW === '0' ? '1' : '0';
  const hIdle = await page.locator(`section.gpu[data-gpu="${idleNow}"] .gpu-meta [data-state]`).first();
  const hBusy = await page.locator(`section.gpu[data-gpu="${NOW}"] .gpu-meta [data-state]`).first();
  check(await hIdle.getAttribute('data-state') === 'idle' && (await hIdle.textContent()) === 'idle',
    `header: GPU ${idleNow}, with no job, says "idle"`);
  const busyText = await hBusy.textContent();
  check(await hBusy.getAttribute('data-state') === 'busy' && /% busy$|unknown/.test(busyText),
    `header: GPU ${NOW}, with a job, says its busy figure ("${busyText}")`);

  // Queue and user charts of the same hour.
  await page.waitForFunction(() => document.querySelector('.chart[data-scope="user"]')?.dataset.series);
  const q = await attrs(page, '.chart[data-scope="queue"]');
  const u = await attrs(page, '.chart[data-scope="user"]');
  check(q.series?.split(',').includes('default') && q.peak === '0.5', `hour: queue chart has queue default at 0.5 GPU (${q.series}, peak ${q.peak})`, JSON.stringify(q));
  check(u.series?.split(',').includes('alice') && Number(u.points) >= 300, `hour: user chart has alice (${u.series}, ${u.points} points)`, JSON.stringify(u));
  await page.screenshot({ path: join(SHOTS, 'history-hour.png'), fullPage: true });

  // ---- day and week, by the buttons ------------------------------------------------------------
  await page.click('.ranges button[data-range="day"]');
  await drawn(page, 'day', 60);
  b = await attrs(page, chart(BUSY));
  i = await attrs(page, chart(IDLE));
  check(Number(b.points) >= 1400 && b.busyPeak === '40', `day: GPU ${BUSY} in 1-minute means (${b.points} points, peak ${b.busyPeak} %)`, JSON.stringify(b));
  check(i.busyPoints === '0' && i.idlePoints === i.points && Number(i.points) >= 1400, `day: the idle GPU is idle in all ${i.points} points`, JSON.stringify(i));
  check(await page.evaluate(() => location.hash) === '#/?range=day', 'day: the range is in the URL (#/?range=day)');
  await page.click('.ranges button[data-range="week"]');
  await drawn(page, 'week', 600);
  b = await attrs(page, chart(BUSY));
  i = await attrs(page, chart(IDLE));
  check(Number(b.points) >= 1000 && b.busyPeak === '40', `week: GPU ${BUSY} in 10-minute means (${b.points} points, peak ${b.busyPeak} %)`, JSON.stringify(b));
  check(i.busyPoints === '0' && i.idlePoints === i.points && Number(i.points) >= 1000, `week: the idle GPU is idle in all ${i.points} points`, JSON.stringify(i));
  await page.screenshot({ path: join(SHOTS, 'history-week.png'), fullPage: true });

  // ---- a fresh page load of the week view (a new tab on a screen of pixel ratio 2: signs in
  // again, as sessionStorage is the tab's) --------------------------------------------------------
  const context2 = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 2 });
  const page2 = await context2.newPage();
  page2.setDefaultTimeout(WAIT_MS);
  page2.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  await page2.goto(URL + '/#/?range=week');
  await page2.fill('#token', ADMIN);
  await page2.click('button[type=submit]');
  await drawn(page2, 'week', 600);
  b = await attrs(page2, chart(BUSY));
  check(Number(b.points) >= 1000 && b.busyPeak === '40', `fresh load of #/?range=week: the week at once (${b.points} points)`);
  const u2 = await attrs(page2, '.chart[data-scope="user"]');
  check(Number(u2.points) >= 1000 && u2.step === '600', `fresh load: the user chart's week (${u2.points} points of 600 s)`, JSON.stringify(u2));
  check(await page2.locator('.ranges button[aria-pressed="true"]').textContent() === 'Week', 'fresh load: the Week button is pressed');

  // The GPU charts of a row of cards share one canvas (chart.js Sheet) laid over the cards: it
  // has the screen's pixels (ratio 2); the busy GPU's chart is drawn at its box's width, again
  // when the window narrows (one card a row: a canvas each), and its place holds its lines.
  const size = (p) => p.evaluate((sel) => {
    const box = document.querySelector(sel);
    const sheets = [...document.querySelectorAll('.gpus > canvas')];
    const pr = box.querySelector('.plot').getBoundingClientRect();
    const c = sheets.find((x) => { const r = x.getBoundingClientRect(); return r.top <= pr.top + 0.5 && r.bottom >= pr.bottom - 0.5; });
    const cr = c.getBoundingClientRect();
    // The chart's place on the canvas, in canvas pixels: the share of it that is drawn on.
    const r = window.devicePixelRatio;
    const img = c.getContext('2d').getImageData(Math.round((pr.left - cr.left) * r), Math.round((pr.top - cr.top) * r), Math.round(pr.width * r), Math.round(pr.height * r)).data;
    let inked = 0;
    for (let i = 3; i < img.length; i += 4) if (img[i]) inked++;
    return {
      sheets: sheets.length, w: c.width, h: c.height, cssW: cr.width, cssH: cr.height, drawn: Number(box.dataset.drawnWidth), box: box.clientWidth,
      covers: cr.left <= pr.left + 0.5 && cr.top <= pr.top + 0.5 && cr.right >= pr.right - 0.5 && cr.bottom >= pr.bottom - 0.5,
      inked: inked / (img.length / 4),
    };
  }, chart(BUSY));
  let sz = await size(page2);
  check(sz.sheets === 1 && sz.w === Math.round(2 * sz.cssW) && sz.h === Math.round(2 * sz.cssH) && sz.covers && Math.abs(sz.drawn - sz.box) <= 2 && sz.inked > 0.02,
    `pixel ratio 2: one canvas for the row of GPU charts, ${sz.w} x ${sz.h} pixels for ${sz.cssW} x ${sz.cssH} CSS pixels, over the busy GPU's chart drawn ${sz.drawn} px wide (${(100 * sz.inked).toFixed(0)} % of its place drawn on)`, JSON.stringify(sz));
  await page2.setViewportSize({ width: 480, height: 900 });
  await page2.waitForFunction((sel) => {
    const box = document.querySelector(sel);
    return Math.abs(Number(box.dataset.drawnWidth) - box.clientWidth) <= 2;
  }, chart(BUSY));
  const sz2 = await size(page2);
  check(sz2.drawn < sz.drawn && sz2.sheets === 2 && sz2.w === Math.round(2 * sz2.cssW) && sz2.covers && sz2.inked > 0.02,
    `narrower window: a canvas per card, the chart redrawn ${sz2.drawn} CSS pixels wide (was ${sz.drawn}) under its canvas`, JSON.stringify(sz2));
  await page2.setViewportSize({ width: 1280, height: 900 });

  // The legend reads out the values at the pointer: the busy GPU's seeded 40 % busy, 50 %
  // compute and 8 GB of 24 GiB (31.0 %); the idle GPU's idle band, no busy figure; the newest
  // point's values once the pointer has left.
  const legend = (g) => page2.locator(`${chart(g)} .legend`).textContent();
  const hoverMid = async (g) => {
    const box = await page2.locator(`${chart(g)} .plot`).boundingBox();
    await page2.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  };
  await hoverMid(BUSY);
  let lg = await legend(BUSY);
  const cursorShown = await page2.locator(`${chart(BUSY)} .cursor`).isVisible();
  check(/Busy 40%/.test(lg) && /Compute allocated 50%/.test(lg) && /Memory in use 31\.0%/.test(lg) && /Idle —/.test(lg)
    && /^\w{3} \d+ \d\d:\d\d/.test(lg) && cursorShown,
  `pointer over GPU ${BUSY}'s week: the values at that time ("${lg}")`, lg);
  await hoverMid(IDLE);
  lg = await legend(IDLE);
  check(/Idle 100%/.test(lg) && /Busy —/.test(lg) && /Compute allocated 0%/.test(lg), `pointer over GPU ${IDLE}'s week: idle, no busy figure ("${lg}")`, lg);
  await page2.mouse.move(2, 2);
  lg = await legend(IDLE);
  check(/^Latest/.test(lg) && !(await page2.locator(`${chart(IDLE)} .cursor`).isVisible()), `pointer gone: the newest values ("${lg}")`, lg);
  const ulg = await page2.locator('.chart[data-scope="user"] .legend').textContent();
  check(/alice 0\.50/.test(ulg), `the user chart's legend reads alice's 0.50 GPU ("${ulg}")`, ulg);
  await page2.screenshot({ path: join(SHOTS, 'history-week-fresh.png'), fullPage: true });

  // Another page's module is read when that page is first shown (not at load): one that cannot
  // be fetched says so, with a way to try again, which then shows the page.
  const atLoad = await page2.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name).filter((n) => /\/app\/(b-)?(users|jobs|job|newjob|queues|widgets)\.js$/.test(n)));
  check(atLoad.length === 0, 'the overview\'s load reads no other page\'s module', JSON.stringify(atLoad));
  const asked = [];
  // The users page's module: app/users.js, or its bundle app/b-users.js as make serves it.
  const usersModule = /\/app\/(b-)?users\.js$/;
  page2.on('request', (rq) => { if (usersModule.test(rq.url())) asked.push(rq.url()); });
  await page2.route(usersModule, (rt) => rt.abort());
  await page2.evaluate(() => { location.hash = '#/users'; });
  await page2.locator('main h1:text("Page not loaded")').waitFor();
  const alert = await page2.locator('main [role=alert]').textContent();
  check(asked.length === 1 && /could not be loaded/.test(alert),
    `a page's module is asked for when the page is first shown; unreachable: "${alert.trim()}"`, JSON.stringify(asked));
  await page2.unroute(usersModule);
  await page2.click('main button:text("Try again")');
  await page2.locator('main h1:text("Users & tokens")').waitFor();
  check(await page2.locator('#nav a[aria-current="page"]').textContent() === 'Users & tokens', 'Try again: the page is shown');

  // A saved token that tesseld no longer accepts: the page signs out with the reason and
  // draws nothing (the history asked for beside whoami is forgotten).  A tab of its own whose
  // sessionStorage holds the bad token before the console's code runs: setting it in page2,
  // whose console still polls, let a poll meet the bad token first and sign out (the token
  // cleared) before the reload, which then had no saved token to refuse (seen once under load).
  const page3 = await context2.newPage();
  page3.setDefaultTimeout(WAIT_MS);
  page3.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  await page3.addInitScript(() => {
    if (!sessionStorage.getItem('test.seeded')) {
      sessionStorage.setItem('test.seeded', '1');
      sessionStorage.setItem('tessel.token', 'tsl_not-a-token');
    }
  });
  await page3.goto(URL + '/#/?range=week');
  await page3.locator('#signin-error').filter({ hasText: 'no longer valid' }).waitFor();
  const after = await page3.evaluate(() => ({ charts: document.querySelectorAll('section.gpu').length, token: sessionStorage.getItem('tessel.token') }));
  check(after.charts === 0 && after.token === null, 'a saved token no longer valid: signed out with the reason, nothing drawn', JSON.stringify(after));
  check(errors.length === 0, 'no error in the browser console', errors.join('\n'));
} catch (e) {
  console.log(`FAIL the session stopped: ${e.message.split('\n')[0]}`);
  failures++;
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
