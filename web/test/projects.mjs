// projects.mjs - the console's project pages in a real browser (Debian's Chromium,
// playwright-core), against a tesseld set up by tests/t/t3173-console-projects.t: project
// vision (queue vq: guarantee 0.5 GPU, limit 1 GPU) with olga its owner, mike a member whose
// job runs with half a GPU, vera a viewer; oscar in no project.  Asserts the DOM, not pixels.
//
//   TESSEL_URL                      the tesseld under test
//   OWNER, VIEWER, OUTSIDER         tokens of olga, vera and oscar
//   JOB                             mike's running job in vision
//   SHOTS                           directory for screenshots;  CHROMIUM  the browser
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const SHOTS = process.env.SHOTS;
const JOB = process.env.JOB;
const WAIT_MS = 30000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
}

// Every form control has a name; exactly one h1 (as browser.mjs checks every page).
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
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
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

const text = (page, sel) => page.locator(sel).first().textContent();

try {
  // ---- a viewer: the list, the page, no member controls ------------------------------------------
  let { context, page } = await signIn(process.env.VIEWER);
  await page.click('#nav a[data-page="projects"]');
  await page.locator('tr[data-project="vision"]').waitFor();
  const rows = await page.locator('tr[data-project]').evaluateAll((trs) => trs.map((t) => t.dataset.project));
  check(rows.join(',') === 'default,vision', `viewer: the list has her projects (${rows.join(', ')})`);
  check((await text(page, 'tr[data-project="vision"] td[data-label="Your role"]')) === 'viewer', 'viewer: her role in vision is viewer');
  check(await page.locator('#nav a[data-page="projects"]').getAttribute('aria-current') === 'page', 'the Projects link is the current page');
  await page.click('tr[data-project="vision"] a');
  await page.locator('main h1:text("Project vision")').waitFor();
  await page.locator(`tr[data-job="${JOB}"]`).waitFor();
  const members = await page.locator('tr[data-member]').evaluateAll((trs) => trs.map((t) => `${t.dataset.member}:${t.dataset.role}`));
  check(members.join(' ') === 'olga:owner mike:member vera:viewer', `viewer: the members with their roles (${members.join(' ')})`);
  check(await page.locator('tr[data-member] select').count() === 0 && await page.locator('form[aria-label="Add a member"]').count() === 0,
    'viewer: no role selects and no form to add members');
  await page.waitForFunction(() => document.querySelector('table[data-queue="vq"] tr[data-res="gpu"] td[data-label="In use"]')?.textContent === '0.5');
  const gpuRow = await page.locator('table[data-queue="vq"] tr[data-res="gpu"] td').allTextContents();
  check(gpuRow.join(' | ') === '0.5 | 0.5 | 1', `viewer: the queue's GPU in use, guarantee and limit (${gpuRow.join(' | ')})`);
  check((await text(page, `tr[data-job="${JOB}"] td[data-label="User"]`)) === 'mike', "viewer: mike's running job is in the project's jobs");
  const folders = await text(page, 'span[data-folders]');
  check(folders === '0 B used, no limit (measured: uploads and read-write jobs refused past it)', `viewer: the folders' use and quota (${folders})`);
  check((await a11y(page)).length === 0, 'viewer: every control is labelled, one h1', await a11y(page));
  await context.close();

  // ---- an outsider: the project does not exist for him -------------------------------------------
  ({ context, page } = await signIn(process.env.OUTSIDER));
  await page.goto(URL + '/#/projects/vision');
  await page.locator('main p.error').waitFor();
  check(/No project vision/.test(await text(page, 'main p.error')) && await page.locator('tr[data-member]').count() === 0,
    'outsider: "No project vision", no member and no job shown');
  await context.close();

  // ---- the owner: add a member, a refusal beside its field, change a role -------------------------
  ({ context, page } = await signIn(process.env.OWNER));
  await page.goto(URL + '/#/projects/vision');
  await page.locator('form[aria-label="Add a member"]').waitFor();
  await page.fill('#am-user', 'nobody-here');
  await page.click('form[aria-label="Add a member"] button[type=submit]');
  await page.locator('.field[data-field="user"].invalid').waitFor();
  check((await text(page, '#am-err-user')) === "no user named 'nobody-here'" && await page.locator('#am-user').getAttribute('aria-invalid') === 'true',
    "owner: an unknown user is refused beside the field (tesseld's 400)");
  await page.fill('#am-user', 'oscar');
  await page.selectOption('#am-role', 'viewer');
  await page.click('form[aria-label="Add a member"] button[type=submit]');
  await page.locator('tr[data-member="oscar"][data-role="viewer"]').waitFor();
  check(true, 'owner: oscar added as a viewer, listed at once');
  await page.selectOption('select[aria-label="Role of oscar"]', 'member');
  await page.locator('tr[data-member="oscar"][data-role="member"]').waitFor();
  check(true, 'owner: oscar made a member with the role select');
  await page.selectOption('select[aria-label="Role of olga"]', 'viewer');
  await page.locator('[role="status"] .msg.error').waitFor();
  check(/last owner/.test(await text(page, '[role="status"] .msg.error')), 'owner: stepping down as the last owner is refused, with the reason');
  check((await a11y(page)).length === 0, 'owner: every control is labelled, one h1', await a11y(page));
  // The screenshot: the page as it loads, at its top (no message left from the checks above).
  await page.reload();
  await page.locator(`tr[data-job="${JOB}"]`).waitFor();
  await page.waitForFunction(() => document.querySelector('table[data-queue="vq"] tr[data-res="gpu"] td[data-label="In use"]')?.textContent === '0.5');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, 'console-project.png'), fullPage: true });
  await context.close();
} catch (e) {
  check(false, `the session ran to its end: ${e.message}`);
}
check(errors.length === 0, 'no error in the browser console', errors.join('\n'));
await browser.close();
process.exit(failures ? 1 : 0);
