// folders.mjs - the console's folder pages in a real browser (Debian's Chromium,
// playwright-core), against a tesseld set up by tests/t/t4050-console-folders.t: folder data
// of tslfa (readme.txt, sub/) shared read-only with tslfb; tslfc with no share.  Asserts the
// DOM and what the downloads hold, not pixels.
//
//   TESSEL_URL                   the tesseld under test
//   OWNER, READER, OUTSIDER      tokens of tslfa, tslfb and tslfc
//   SHOTS                        directory for screenshots;  CHROMIUM  the browser
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const SHOTS = process.env.SHOTS;
const WAIT_MS = 30000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
}

async function a11y(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const el of document.querySelectorAll('input, select, textarea, button')) {
      if (el.type === 'hidden' || !el.offsetParent) continue;
      const named = el.labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim());
      if (!named) bad.push(el.outerHTML.slice(0, 80));
    }
    if (document.querySelectorAll('main h1').length !== 1) bad.push('not exactly one h1');
    return bad;
  });
}

const browser = await launch();
const errors = [];

async function signIn(token) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text()); });
  await page.goto(URL + '/');
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();
  return { context, page };
}

// Drop files on the drop zone, as a person dragging them from their desktop does.
async function drop(page, files) {
  const dt = await page.evaluateHandle((fs) => {
    const d = new DataTransfer();
    for (const f of fs) d.items.add(new File([f.text], f.name, { type: 'text/plain' }));
    return d;
  }, files);
  await page.dispatchEvent('#fb-drop', 'dragover', { dataTransfer: dt });
  await page.dispatchEvent('#fb-drop', 'drop', { dataTransfer: dt });
}

const text = (page, sel) => page.locator(sel).first().textContent();
const rows = (page) => page.locator('tr[data-file]').evaluateAll((trs) => trs.map((t) => `${t.dataset.file}:${t.dataset.type}`));

try {
  // ---- the owner: the list, the folder, uploads (drop and picker), a directory, a download ------
  let { context, page } = await signIn(process.env.OWNER);
  await page.click('#nav a[data-page="folders"]');
  await page.locator('tr[data-folder="data"]').waitFor();
  check((await text(page, 'tr[data-folder="data"] td[data-label="Your access"]')) === 'manage', 'owner: data listed, access manage');
  check(/\/folders\/data$/.test(await text(page, 'tr[data-folder="data"] td[data-label="Path"]')), 'owner: with its path');
  check((await a11y(page)).length === 0, 'owner: the list page: every control labelled, one h1', await a11y(page));
  await page.screenshot({ path: join(SHOTS, 'console-folders-list.png'), fullPage: true });
  await page.click('tr[data-folder="data"] a');
  await page.locator('main h1:text("Folder data")').waitFor();
  await page.locator('tr[data-file="readme.txt"]').waitFor();
  check((await rows(page)).join(' ') === 'readme.txt:file sub:dir', `owner: the folder's entries (${(await rows(page)).join(' ')})`);
  await drop(page, [{ name: 'dropped.txt', text: 'dropped by tslfa\n' }]);
  await page.locator('tr[data-file="dropped.txt"]').waitFor();
  check(/Uploaded dropped\.txt/.test(await text(page, 'main [role="status"]')), 'owner: a file dropped on the page is uploaded, and listed');
  await page.setInputFiles('#fb-pick', { name: 'picked.txt', mimeType: 'text/plain', buffer: Buffer.from('picked by tslfa\n') });
  await page.locator('tr[data-file="picked.txt"]').waitFor();
  check(true, 'owner: a file picked with the file input is uploaded, and listed');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('button[aria-label="Download readme.txt"]')]);
  const got = readFileSync(await dl.path(), 'utf8');
  check(got === 'read me\n' && dl.suggestedFilename() === 'readme.txt', `owner: readme.txt downloads with its bytes (${JSON.stringify(got)})`);
  check((await a11y(page)).length === 0, 'owner: the folder page: every control labelled, one h1', await a11y(page));
  await page.click('tr[data-file="sub"] a');
  await page.locator('nav.crumbs a:text("data")').waitFor();
  await page.locator('tr[data-file="inner.txt"]').waitFor();
  check((await rows(page)).join(' ') === 'inner.txt:file', 'owner: into sub/, with the path as links back');
  await drop(page, [{ name: 'deep.txt', text: 'in sub\n' }]);
  await page.locator('tr[data-file="deep.txt"]').waitFor();
  check(true, 'owner: a file dropped in sub/ goes into sub/');
  await page.click('nav.crumbs a:text("data")');
  await page.locator('tr[data-file="dropped.txt"]').waitFor();
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, 'console-folders.png'), fullPage: true });
  await context.close();

  // ---- a reader (ro): sees and downloads, an upload is refused with tesseld's reason -----------
  ({ context, page } = await signIn(process.env.READER));
  await page.goto(URL + '/#/folders');
  await page.locator('tr[data-folder="data"]').waitFor();
  check((await text(page, 'tr[data-folder="data"] td[data-label="Your access"]')) === 'ro', 'reader: data listed, access ro');
  await page.goto(URL + '/#/folders/data');
  await page.locator('tr[data-file="dropped.txt"]').waitFor();
  await drop(page, [{ name: 'nope.txt', text: 'x' }]);
  await page.locator('[role="status"] .msg.error').waitFor();
  check(/nope\.txt: .*ro access.*may not write/.test(await text(page, '[role="status"] .msg.error')), 'reader: a drop is refused, with the reason');
  check(await page.locator('tr[data-file="nope.txt"]').count() === 0, 'reader: nothing uploaded');
  await context.close();

  // ---- an outsider: the folder does not exist for him -----------------------------------------
  ({ context, page } = await signIn(process.env.OUTSIDER));
  await page.goto(URL + '/#/folders/data');
  await page.locator('main p.error').waitFor();
  check(/No folder data/.test(await text(page, 'main p.error')) && await page.locator('tr[data-file]').count() === 0,
    'outsider: "No folder data", no file shown, no drop zone');
  await context.close();
} catch (e) {
  check(false, `the session ran to its end: ${e.message}`);
}
check(errors.length === 0, 'no error in the browser console', errors.join('\n'));
await browser.close();
process.exit(failures ? 1 : 0);
