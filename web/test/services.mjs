// services.mjs - the console's services page in a real browser (Debian's Chromium,
// playwright-core), against a tesseld set up by tests/t/t7056-console-services.t: service web
// of the admin with 2 replicas of the stand-in server, some traffic already through it.
// Asserts the DOM and what the endpoint answers, not pixels.
//
//   TESSEL_URL   the tesseld under test;  ADMIN  its admin token;  ENDPOINT  web's endpoint
//   SHOTS        directory for screenshots;  CHROMIUM  the browser
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const SHOTS = process.env.SHOTS;
const ENDPOINT = process.env.ENDPOINT;
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

// The endpoint's status for a request with token.  The proxy takes a new or revoked token at
// its next reload, at most 5 s after the last (docs/serving.md); callUntil waits up to 30 s.
async function call(token) {
  const res = await fetch(ENDPOINT + '/x', { headers: { Authorization: `Bearer ${token}` } });
  await res.text();
  return res.status;
}
async function callUntil(token, want) {
  let got = 0;
  for (let i = 0; i < 120 && got !== want; i++) {
    got = await call(token);
    if (got !== want) await new Promise((r) => setTimeout(r, 250));
  }
  return got;
}

const browser = await launch();
const errors = [];
const svc = '[data-service="web"]';

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text()); });
  await page.goto(URL + '/');
  await page.fill('#token', process.env.ADMIN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();

  // ---- the list: endpoint, replicas with their figures ----------------------------------------
  await page.click('#nav a[data-page="services"]');
  await page.locator(`${svc} h2:text("web")`).waitFor();
  check((await page.locator(`${svc} code`).first().textContent()) === ENDPOINT, 'web is listed with its endpoint');
  await page.waitForFunction((s) => document.querySelectorAll(`${s} tr[data-replica]`).length === 2, svc);
  const reps = await page.locator(`${svc} tr[data-replica]`).evaluateAll((trs) => trs.map((t) =>
    [...t.querySelectorAll('td')].map((td) => td.textContent)));
  check(reps.every((r) => /gpu\d Fake (T4|A100) ×0\.25/.test(r[1])), `each replica shows its GPU (${reps.map((r) => r[1]).join('; ')})`);
  await page.waitForFunction((s) => [...document.querySelectorAll(`${s} tr[data-replica] td[data-label="Health"]`)].every((td) => td.textContent === 'UP'), svc);
  check(true, 'each replica is UP');
  await page.waitForFunction((s) => [...document.querySelectorAll(`${s} tr[data-replica] td[data-label="Rate (req/s)"]`)].every((td) => td.textContent !== '—'), svc);
  const figs = await page.locator(`${svc} tr[data-replica]`).evaluateAll((trs) => trs.map((t) =>
    ['Weight', 'Rate (req/s)', 'Latency (ms)'].map((l) => t.querySelector(`td[data-label="${l}"]`).textContent)));
  check(figs.every((f) => /^\d+$/.test(f[0]) && /^\d+\.\d$/.test(f[1]) && /^\d+\.\d$/.test(f[2])),
    `each replica: its weight, measured rate and latency (${JSON.stringify(figs)})`);
  check((await a11y(page)).length === 0, 'the page: every control labelled, one h1', await a11y(page));

  // ---- scaling: errors beside the field, then 3 replicas ----------------------------------------
  const rep = `${svc} form[aria-label="Scale web"]`;
  await page.fill(`${rep} input`, '65');
  await page.click(`${rep} button[type=submit]`);
  await page.locator(`${rep} .field[data-field="replicas"] .fielderr:not(:empty)`).waitFor();
  check(/replicas/.test(await page.locator(`${rep} .fielderr`).textContent())
    && (await page.locator(`${rep} input`).getAttribute('aria-invalid')) === 'true',
  'scale to 65: the API\'s error beside the field, which is marked invalid');
  await page.fill(`${rep} input`, '3');
  await page.click(`${rep} button[type=submit]`);
  await page.locator('main [role="status"] .msg.ok').waitFor();
  check(/web: 3 replicas wanted/.test(await page.locator('main [role="status"]').textContent()), 'scale to 3: confirmed');
  await page.waitForFunction((s) => document.querySelectorAll(`${s} tr[data-replica]`).length === 3, svc);
  check(true, 'three replicas are listed');

  // ---- tokens: create (shown once), it calls the endpoint, revoke ------------------------------
  const tk = `${svc} form[aria-label="New token for web"]`;
  await page.fill(`${tk} input`, 'frontend');
  await page.click(`${tk} button[type=submit]`);
  await page.locator(`${tk} code.token`).waitFor();
  const secret = await page.locator(`${tk} code.token`).textContent();
  check(secret.length >= 32, 'a new token is shown once');
  await page.locator(`${svc} [data-tokens] td:text("frontend")`).waitFor();
  check(true, '... and listed by its label, without its secret');
  check(!(await page.locator(`${svc} [data-tokens]`).textContent()).includes(secret), 'the list does not show the secret');
  check(await callUntil(secret, 200) === 200, 'the new token calls the endpoint (200)');
  await page.waitForFunction((s) => document.querySelectorAll(`${s} tr[data-replica] td[data-label="Health"]`).length === 3
    && [...document.querySelectorAll(`${s} tr[data-replica] td[data-label="Health"]`)].every((td) => td.textContent === 'UP'), svc);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, 'console-services.png'), fullPage: true });
  await page.click(`${svc} [data-tokens] button[aria-label^="Revoke token"]`);
  await page.click(`${svc} [data-tokens] button[data-key$=":yes"]`);
  await page.locator(`${svc} [data-tokens] p.empty`).waitFor();
  check(true, 'revoke asks, then the token is gone from the list');
  check(await callUntil(secret, 401) === 401, 'the revoked token is refused by the endpoint (401)');

  // ---- delete, with its confirmation -----------------------------------------------------------
  await page.click(`${svc} button[aria-label="Delete service web"]`);
  await page.locator(`${svc} .confirm .q:text("Delete service web?")`).waitFor();
  check(await page.locator(svc).count() === 1, 'delete asks first: the service is still there');
  await page.screenshot({ path: join(SHOTS, 'console-services-delete.png'), fullPage: false });
  await page.click(`${svc} button[data-key="del:web:yes"]`);
  await page.locator('main p.empty:text("No service yet")').waitFor();
  check(/Service web deleted/.test(await page.locator('main [role="status"]').textContent()), 'after yes: deleted, and said so');
  await context.close();
} catch (e) {
  check(false, `the session ran to its end: ${e.message}`);
}
check(errors.length === 0, 'no error in the browser console', errors.join('\n'));
await browser.close();
process.exit(failures ? 1 : 0);
