// terminal.mjs - the console's terminal page in a real browser (Debian's Chromium,
// playwright-core), against a tesseld set up by tests/t/t7035-console-terminal.t: nobody's job
// TTYJOB (/bin/sh on a terminal) and SHJOB (sleep, no terminal).  Asserts the DOM and the
// terminal's text (xterm.js's DOM renderer), not pixels.
//
//   TESSEL_URL          the tesseld under test;   TD_PID   its pid (stopped at the end)
//   TOKEN               nobody's token;           TTYJOB, SHJOB   the jobs' ids
//   SHOTS               directory for screenshots;  CHROMIUM  the browser
//
// Prints "PASS text" / "FAIL text" per check (the shell wrapper makes them TAP).

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
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

const browser = await launch();
const errors = [];
const elsewhere = [];
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
const page = await context.newPage();
page.setDefaultTimeout(WAIT_MS);
page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
// Once tesseld has been stopped on purpose (the last step), the page's own refreshes find no one
// listening: Chromium logs each as "net::ERR_CONNECTION_REFUSED", or "net::ERR_CONNECTION_RESET"
// for one tesseld accepted while it shut down (seen under ASan, where the shutdown is slower):
// the expected outcome.
let tesseldStopped = false;
page.on('console', (m) => {
  if (m.type() !== 'error' || /status of 4\d\d/.test(m.text())) return;
  if (tesseldStopped && /net::ERR_CONNECTION_(REFUSED|RESET)/.test(m.text())) return;
  errors.push(m.text());
});
page.on('request', (r) => {
  const u = r.url();
  if (!u.startsWith(URL) && !u.startsWith(URL.replace(/^http/, 'ws')) && !u.startsWith('data:')) elsewhere.push(u);
});
const xtermLoads = [];
page.on('response', (r) => { if (r.url().includes('/vendor/xterm-')) xtermLoads.push(`${r.status()} ${new globalThis.URL(r.url()).pathname}`); });

// The terminal's lines as text (xterm.js's DOM renderer: one div a row, non-breaking spaces).
const screen = () => page.evaluate(() => [...document.querySelectorAll('#terminal .xterm-rows > div')]
  .map((d) => d.textContent.replace(/\u00a0/g, ' ').trimEnd()).join('\n'));
// A line typed before the shell has printed its prompt is echoed by the terminal at once, and
// the prompt then comes before the command's output on the same line ("$ hello-42"): a line
// that starts the pattern may start with the shell's prompt.
async function waitText(re) {
  const src = re.source.startsWith('^') ? `^(?:[$#] )?${re.source.slice(1)}` : re.source;
  await page.waitForFunction((s) => new RegExp(s, 'm').test([...document.querySelectorAll('#terminal .xterm-rows > div')]
    .map((d) => d.textContent.replace(/\u00a0/g, ' ').trimEnd()).join('\n')), src);
  return (await screen()).match(new RegExp(src, 'm'));
}
async function typeLine(s) {
  await page.locator('#terminal .xterm-helper-textarea').focus();
  await page.keyboard.type(s);
  await page.keyboard.press('Enter');
}
const text = (sel) => page.locator(sel).first().textContent();
let marker = 0;
// `stty size` as the job's terminal sees it: [rows, cols].
async function sttySize() {
  const m = ++marker;
  await typeLine(`echo sz${m}-$(stty size | tr ' ' x)-end`);
  const r = await waitText(new RegExp(`^sz${m}-(\\d+)x(\\d+)-end`));
  return [Number(r[1]), Number(r[2])];
}

try {
  await page.goto(URL + '/');
  await page.fill('#token', process.env.TOKEN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();

  // ---- a job started with a terminal: attach ----------------------------------------------------
  const A = process.env.TTYJOB, B = process.env.SHJOB;
  await page.goto(`${URL}/#/jobs/${A}`);
  await page.locator('#terminal-open').waitFor();
  check((await text('#terminal-open')) === 'Terminal', 'the running job\'s page has "Terminal"');
  await page.click('#terminal-open');
  await page.locator('#terminal[data-state="open"]').waitFor();
  check(/^#\/jobs\/\d+\/terminal$/.test(await page.evaluate(() => location.hash)), 'it opens #/jobs/ID/terminal');
  check(/attached to the job's terminal/.test(await text('#term-status')), 'the page says it is attached');
  check(xtermLoads.includes('200 /vendor/xterm-6.0.0/xterm.mjs') && xtermLoads.includes('200 /vendor/xterm-6.0.0/xterm.css'),
    'xterm.js and its CSS come from tesseld (/vendor/xterm-6.0.0/)', xtermLoads.join('\n'));
  await typeLine('echo hello-$((6*7))');
  await waitText(/^hello-42$/);
  check(true, 'a typed command ran in the job and its output came back (hello-42)');
  const [r1, c1] = await sttySize();
  check(r1 >= 10 && c1 >= 80, `the job's terminal has the page's size (${r1} x ${c1})`);
  await typeLine('printf "\\033[1;32m%s\\033[0m:\\033[1;34m%s\\033[0m\\n" "$(id -un) in job $TESSEL_JOB_ID" "$PWD"; echo hello-$((6*7))');
  await waitText(/^hello-42$/);
  await page.screenshot({ path: join(SHOTS, 'console-terminal.png') });

  // ---- resize: a smaller window, a smaller terminal ---------------------------------------------
  await page.setViewportSize({ width: 800, height: 560 });
  let r2 = r1, c2 = c1;
  for (let i = 0; i < 20 && c2 >= c1; i++) { await page.waitForTimeout(100); [r2, c2] = await sttySize(); }
  check(c2 < c1 && r2 < r1, `a smaller window resizes the job's terminal (${r1} x ${c1} -> ${r2} x ${c2})`);

  // ---- the job ends: said, no reconnect for a finished job ---------------------------------------
  await typeLine('exit 3');
  await page.locator('#terminal[data-state="ended"]').waitFor();
  check(/Job \d+ has ended \(exit 3\)/.test(await text('#term-msg')), 'the job\'s end is said: "has ended (exit 3)"', await text('#term-msg'));
  check(await page.locator('#term-reconnect').count() === 0, '... with no Reconnect (the job is gone)');
  await page.goto(`${URL}/#/jobs/${A}`);
  await page.locator('main h1 .badge').waitFor();
  await page.waitForFunction(() => !/running/.test(document.querySelector('main h1').textContent));
  check(await page.locator('#terminal-open').count() === 0, 'a finished job\'s page has no "Terminal"');

  // ---- a job without a terminal: a new shell in it (exec) ----------------------------------------
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${URL}/#/jobs/${B}`);
  await page.locator('#terminal-open').waitFor();
  check((await text('#terminal-open')) === 'Terminal (new shell)', 'a job without a terminal offers a new shell');
  await page.click('#terminal-open');
  await page.locator('#terminal[data-state="open"]').waitFor();
  check(/a new shell in the job/.test(await text('#term-status')), 'the page says it is a new shell');
  await typeLine('echo in-shell-$((7*6)) as $(id -un) TERM=$TERM');
  await waitText(/^in-shell-42 as nobody TERM=xterm-256color$/);
  check(true, 'the shell runs in the job as its user, TERM set (in-shell-42 as nobody TERM=xterm-256color)');
  await typeLine('exit');
  await page.locator('#terminal[data-state="ended"]').waitFor();
  check(/The shell has ended \(exit 0\)/.test(await text('#term-msg')), 'the shell\'s end is said: "The shell has ended (exit 0)"');
  check((await text('#term-reconnect')) === 'New shell', '... with a "New shell" button');

  // ---- the connection drops (tesseld stops): said, with Reconnect --------------------------------
  await page.click('#term-reconnect');
  await page.locator('#terminal[data-state="open"]').waitFor();
  await typeLine('echo again-$((1+1))');
  await waitText(/^again-2$/);
  check(true, '"New shell" opens another shell (a new ticket: each is good once)');
  tesseldStopped = true;
  process.kill(Number(process.env.TD_PID), 'SIGTERM');
  await page.locator('#terminal[data-state="closed"]').waitFor();
  const m = await text('#term-msg');
  check(/Disconnected/.test(m) && /job goes on/.test(m), 'tesseld stopping: "Disconnected ... The job goes on"', m);
  check((await text('#term-reconnect')) === 'Reconnect', '... with a "Reconnect" button');
  // The page's periodic refreshes go on against the stopped tesseld: nothing else goes wrong.
  await page.waitForTimeout(3000);
} catch (e) {
  // What the page showed when a wait ran out: the terminal's state, message and lines.
  const seen = await page.evaluate(() => {
    const t = document.querySelector('#terminal');
    const rows = [...document.querySelectorAll('#terminal .xterm-rows > div')]
      .map((d) => d.textContent.replace(/\u00a0/g, ' ').trimEnd()).filter((l) => l);
    return `state=${t ? t.dataset.state : 'none'} status=${document.querySelector('#term-status')?.textContent}` +
      ` msg=${document.querySelector('#term-msg')?.textContent}\n${rows.join('\n')}`;
  }).catch((x) => `(page not readable: ${x.message})`);
  check(false, `the session ran to its end: ${e.message}`, seen);
}
check(elsewhere.length === 0, 'nothing was fetched from anywhere but tesseld', elsewhere.join('\n'));
check(errors.length === 0, 'no error in the browser console', errors.join('\n'));
await browser.close();
process.exit(failures ? 1 : 0);
