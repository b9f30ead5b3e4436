// notebook.mjs - a job's Jupyter opened from the console in a real browser (Debian's Chromium,
// playwright-core), against a tesseld set up by tests/t/t7073-console-notebook.t: nobody's job
// JOB runs jupyter-notebook as its service "jupyter", with NOTEBOOK (one cell, print(6*7)) in its
// directory.  Asserts the DOM (the console's link, Jupyter's cell output), not pixels.  Then, in
// the same browser, another user's page (OTHER_URL: a ticket URL of a job of his whose service
// serves a page that tries to read nobody's notebook) finds nobody's service out of its reach:
// each service is an origin of its own.
//
//   TESSEL_URL   the console (tesseld's API origin)   TOKEN   nobody's token
//   JOB          the job's id                         NOTEBOOK  the notebook's file name
//   SHOTS        directory for screenshots            CHROMIUM  the browser
//   OTHER_URL    the other user's ticket URL
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const JOB = process.env.JOB;
const SHOTS = process.env.SHOTS;
const WAIT_MS = 60000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
}

const browser = await launch();
const errors = [];
const pending = new Set();
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
const page = await context.newPage();
page.setDefaultTimeout(WAIT_MS);
page.on('pageerror', (e) => errors.push(`console pageerror: ${e.message}`));

try {
  await page.goto(URL + '/');
  await page.fill('#token', process.env.TOKEN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();

  // ---- the job's page: "Open jupyter" --------------------------------------------------------
  await page.goto(`${URL}/#/jobs/${JOB}`);
  const link = page.locator('button[data-service="jupyter"]');
  await link.waitFor();
  check((await link.textContent()) === 'Open jupyter', 'the running job\'s page has "Open jupyter"');
  await page.screenshot({ path: join(SHOTS, 'console-notebook-link.png') });

  // A click: a ticket, then Jupyter in a new tab, on tesseld's other origin.
  const [nb] = await Promise.all([context.waitForEvent('page'), link.click()]);
  nb.setDefaultTimeout(WAIT_MS);
  nb.on('pageerror', (e) => errors.push(`notebook pageerror: ${e.message}`));
  // Requests of the notebook's tab still under way (said when the session fails).
  nb.on('request', (r) => pending.add(r));
  nb.on('requestfinished', (r) => pending.delete(r));
  // A request the browser cancelled (net::ERR_ABORTED: the tab went on to the notebook while the
  // file list's page still loaded its extensions) is no error of either side; any other failure is.
  nb.on('requestfailed', (r) => {
    pending.delete(r);
    const why = r.failure()?.errorText;
    if (why !== 'net::ERR_ABORTED') errors.push(`failed: ${r.url()} ${why}`);
  });
  await nb.waitForURL(/\/tree/);
  const u = new globalThis.URL(nb.url());
  check(u.origin !== new globalThis.URL(URL).origin, `the notebook opens on another origin (${u.origin}, not the console's)`);
  check(u.hostname === `j${JOB}-jupyter.localhost`,
    `on the service's own host name, an origin of its own (${u.hostname})`);
  check(u.pathname === '/tree' && !u.search.includes('tessel-ticket'),
    `at the root of its host, the ticket traded for a cookie (${u.pathname}${u.search})`);
  check(await nb.evaluate(() => !window.opener), 'the notebook\'s tab has no opener (it cannot reach the console\'s window)');
  check(await nb.evaluate(() => !document.cookie.includes('tessel-svc')), 'tesseld\'s cookie is HttpOnly (no script of the notebook reads it)');
  await nb.locator('#notebook_list .item_name', { hasText: process.env.NOTEBOOK }).first().waitFor();
  check(true, 'Jupyter\'s file list shows the job\'s notebook');
  await nb.screenshot({ path: join(SHOTS, 'notebook-tree.png') });

  // ---- the notebook: run its cell -----------------------------------------------------------------
  await nb.goto(`${u.origin}/notebooks/${process.env.NOTEBOOK}`, { waitUntil: "domcontentloaded" });
  await nb.locator('#kernel_indicator_icon.kernel_idle_icon').waitFor();
  check(true, 'the notebook opened and its kernel is idle (its WebSocket through tesseld)');
  await nb.locator('.cell .CodeMirror').first().click();
  await nb.keyboard.press('Shift+Enter');
  const out = nb.locator('.output_area .output_text').first();
  await out.waitFor();
  await nb.waitForFunction(() => /42/.test(document.querySelector('.output_area .output_text')?.textContent || ''));
  check(/^\s*42\s*$/.test(await out.textContent()), 'its cell ran: print(6*7) printed 42');
  await nb.screenshot({ path: join(SHOTS, 'notebook-cell.png') });
  check(errors.length === 0, 'no script error on either page', errors.join('\n'));

  // ---- another user's page in this browser (the review's F1) -----------------------------------
  // His page (its own origin) tries to read nobody's notebook: a fetch with the browser's
  // cookies and a frame's document; it writes what it got into its title.
  const other = await context.newPage();
  other.setDefaultTimeout(WAIT_MS);
  await other.goto(process.env.OTHER_URL);
  await other.waitForFunction(() => document.title.startsWith('DONE'));
  const title = await other.title();
  const ou = new globalThis.URL(other.url());
  check(ou.origin !== u.origin, `the other user's page is on his service's own origin (${ou.origin})`);
  check(title === 'DONE fetch:blocked frame:blocked',
    `his page reads nothing of nobody's notebook, by fetch nor through a frame ("${title}")`);
  const cookies = await context.cookies();
  const mine = cookies.filter((c) => c.name === 'tessel-svc');
  check(mine.length === 2 && mine.every((c) => !c.domain.startsWith('.')) &&
    new Set(mine.map((c) => c.domain)).size === 2,
    `the browser holds one host-only tessel-svc cookie per service (${mine.map((c) => c.domain).join(', ')})`);
} catch (e) {
  check(false, `the session went to its end`, `${e.stack || e}\npending: ${[...pending].map((r) => r.url()).join('\n')}\n${errors.join('\n')}`);
  await page.screenshot({ path: join(SHOTS, 'failure.png') }).catch(() => {});
}
await browser.close();
process.exit(failures ? 1 : 0);
