// browser.mjs - the web console in a real browser (Debian's Chromium, driven by playwright-core)
// against a running tesseld with fake GPUs.  Run by tests/t/t7000-console-browser.t, which
// starts tesseld and passes:
//
//   TESSEL_URL    http://127.0.0.1:PORT of the tesseld under test
//   TESSEL_ADMIN  the admin token
//   SHOTS         directory for the screenshots (one PNG per page and state)
//   CHROMIUM      the browser (default /usr/bin/chromium)
//   PROBE         optional: tcu-probe, run as a job that holds GPU memory (fake driver)
//   WORK          a scratch directory (the probe job waits for a file there)
//
// Prints one line per check, "PASS text" or "FAIL text" (the shell wrapper turns them into TAP),
// and exits non-zero if it could not run to the end.  Every wait is bounded (WAIT_MS); no check
// is about time.

import { launch } from './chromium.mjs';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const ADMIN = process.env.TESSEL_ADMIN;
const SHOTS = process.env.SHOTS;
const WORK = process.env.WORK;
const PROBE = process.env.PROBE || '';
const WAIT_MS = 30000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
  return cond;
}

// The API directly (setting the scene and checking what the console did).
async function api(method, path, body, token = ADMIN) {
  const res = await fetch(URL + path, {
    method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function waitApi(fn, what) {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// Wait until job id is in state; on timeout the error says where it is.
async function waitState(id, state, token = ADMIN) {
  let j = null;
  try {
    await waitApi(async () => (j = (await api('GET', `/v1/jobs/${id}`, undefined, token)).body).state === state, `job ${id} to be ${state}`);
  } catch (e) {
    throw new Error(`${e.message}: it is ${j?.state} (${j?.reason})`);
  }
}

async function shot(page, name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

// Does the page pass the basic accessibility checks: every form control has a name, every
// bar has a text equivalent, one h1?
async function a11y(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const el of document.querySelectorAll('input, select, textarea, button')) {
      if (el.type === 'hidden' || !el.offsetParent) continue;
      const named = el.labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim());
      if (!named) bad.push(el.outerHTML.slice(0, 80));
    }
    for (const b of document.querySelectorAll('.bar')) if (!b.getAttribute('aria-label')) bad.push('bar without aria-label');
    if (document.querySelectorAll('main h1').length !== 1) bad.push('not exactly one h1');
    return bad;
  });
}

async function noOverflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
}

const browser = await launch(['--disable-quic']);
const consoleErrors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) consoleErrors.push(m.text()); });

  // ---- the scene: a user alice, and a job of hers holding GPU memory --------------------------
  const alice = await api('POST', '/v1/users', { name: 'alice' });
  const aliceTok = (await api('POST', '/v1/tokens', { user: 'alice', name: 'console-test' })).body.token;
  check(alice.status === 201 && /^tsl_/.test(aliceTok), 'scene: user alice and her token created through the API');

  // ---- sign in ---------------------------------------------------------------------------------
  await page.goto(URL + '/');
  await page.locator('form.signin').waitFor();
  check(await page.locator('label[for="token"]').textContent() === 'Access token', 'sign-in page: a labelled token field');
  check(!(await page.locator('#top').isVisible()), 'sign-in page: no navigation before signing in');
  await shot(page, '01-signin');
  await page.fill('#token', 'tsl_' + '0'.repeat(64));
  await page.click('button[type=submit]');
  await page.locator('#signin-error:not(:empty)').waitFor();
  check(/not valid/.test(await page.locator('#signin-error').textContent()), 'a wrong token is refused with a message');
  await page.fill('#token', ADMIN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();
  check(await page.locator('#whoami').textContent() === 'admin (admin)', 'signed in as admin: the header names the user and role');
  check(await page.evaluate(() => sessionStorage.getItem('tessel.token') !== null && localStorage.getItem('tessel.token') === null),
    'the token is kept in sessionStorage (not localStorage) without "remember me"');

  // ---- overview ----------------------------------------------------------------------------------
  check(await page.evaluate(() => document.querySelector('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])')?.className) === 'skip',
    'keyboard: "Skip to content" is the first stop in the tab order');
  check(await page.evaluate(() => document.activeElement === document.querySelector('main h1')), 'keyboard: after signing in, the focus is on the page heading');
  const gpus = (await api('GET', '/v1/gpus')).body.gpus;
  await page.locator('section.gpu').nth(gpus.length - 1).waitFor();
  check(await page.locator('section.gpu table.slices').count() === 0, 'overview: all GPUs idle before any job');
  // alice's job, submitted while the overview is open, holding GPU memory (fake driver).
  const hold = PROBE
    ? { argv: [PROBE, 'ctx', 'alloc:mem:3G', `waitfile:${WORK}/release`], name: 'hold-3g', gpu: 0.5, gpu_mem: '6G', env: { TESSEL_FAKE_CTX_MEM: '64M' } }
    : { argv: ['sh', '-c', `while [ ! -e ${WORK}/release ]; do sleep 0.2; done`], name: 'hold', gpu: 0.5, gpu_mem: '6G' };
  const held = (await api('POST', '/v1/jobs', hold, aliceTok)).body;
  await waitState(held.id, 'running');
  // ... and one of the admin's, a whole GPU (the other one), so that the overview shows both.
  const whole = PROBE
    ? { argv: [PROBE, 'ctx', 'alloc:mem:10G', `waitfile:${WORK}/release`], name: 'train-big', gpus: 1, gpu_mem: '20G', env: { TESSEL_FAKE_CTX_MEM: '64M' } }
    : { argv: ['sh', '-c', `while [ ! -e ${WORK}/release ]; do sleep 0.2; done`], name: 'train-big', gpus: 1, gpu_mem: '20G' };
  const big = (await api('POST', '/v1/jobs', whole)).body;
  await waitState(big.id, 'running');
  await page.locator(`section.gpu table.slices a[href="#/jobs/${big.id}"]`).waitFor();
  check(await page.locator('section.gpu table.slices tbody tr').count() === 2, 'overview: two slices, one per job, each in its GPU\'s legend');
  // A job of alice's that cannot fit now (0.5 GPU free at most): it waits in the queue.
  const waiting = (await api('POST', '/v1/jobs', { argv: ['sh', '-c', 'echo ran'], name: 'wait-0.75', gpu: 0.75 }, aliceTok)).body;
  await page.locator('.stats a[href="#/jobs?state=pending"]:text("1 job")').waitFor();
  check((await api('GET', `/v1/jobs/${waiting.id}`)).body.state === 'pending', 'overview: the queue length shows the job that waits (1 job queued)');
  check(await page.locator('section.gpu').count() === gpus.length, `overview: one card per GPU (${gpus.length})`);
  check(await page.locator('#simbanner').isVisible() && await page.locator('section.gpu .badge.sim').count() === gpus.length,
    'overview: simulated GPUs are marked (banner and a badge per GPU)');
  const slice = page.locator(`section.gpu table.slices a[href="#/jobs/${held.id}"]`);
  await slice.waitFor();
  check(true, `overview: alice's job ${held.id} appears as a slice in its GPU's legend without a reload`);
  const placedGpu = (await api('GET', `/v1/jobs/${held.id}`)).body.placement[0].gpu;
  const card = page.locator(`section.gpu[data-gpu="${placedGpu}"]`);
  const computeLabel = await card.locator('.bar').first().getAttribute('aria-label');
  check(/0\.5 of 1 GPU allocated/.test(computeLabel) && computeLabel.includes(`job ${held.id} (alice)`),
    'overview: the compute bar has a text equivalent naming the slice, its user and share', computeLabel);
  const heads = await card.locator('table.slices thead th').allTextContents();
  const busyCell = (await card.locator(`table.slices tr:has(a[href="#/jobs/${held.id}"]) td[data-col="busy"]`).textContent()).trim();
  check(heads[2] === 'Compute' && heads[3] === 'Busy time' && /^\d+\.\d s$/.test(busyCell),
    `overview: each slice's busy time (busy_ms) is shown next to its compute share ("${busyCell}")`, JSON.stringify(heads));
  if (PROBE) {
    await page.waitForFunction((g) => /3\.06 GiB in use/.test(document.querySelector(`section.gpu[data-gpu="${g}"] .bar:nth-of-type(1)`)?.closest('.card').querySelectorAll('.bar')[1].getAttribute('aria-label') || ''), placedGpu);
    check(true, 'overview: the memory bar shows the 3 GiB + 64 MiB the job allocated in its 6 GiB slice');
  }
  await page.waitForFunction(() => document.querySelectorAll('section.gpu .chart[data-drawn]').length > 0);
  const legends = await page.locator('section.gpu .chart .legend').allTextContents();
  check(legends.length === gpus.length && await page.locator('section.gpu .chart[data-drawn] .plot').count() === gpus.length
    && await page.locator('.gpus > canvas').count() === 1
    && legends.every((t) => ['Idle', 'Busy', 'Memory in use', 'Compute allocated'].every((w) => t.includes(w))),
  'overview: a history chart per GPU (the row of two drawn on one canvas), its legend naming idle, busy, memory in use and compute allocated', JSON.stringify(legends));
  check((await a11y(page)).length === 0, 'overview: every control is labelled, every bar has a text equivalent', await a11y(page));
  await page.waitForTimeout(2500); // let a few history samples arrive for the screenshot
  await shot(page, '02-overview');

  // ---- new job: an API validation error beside its field, then a job that runs ------------------
  await page.click('#nav a[data-page="new"]');
  await page.locator('main h1:text("New job")').waitFor();
  check(await page.evaluate(() => document.activeElement?.tagName) === 'H1', 'keyboard: after navigating, the focus is on the page heading');
  await page.fill('#f-command', 'echo nothing');
  await page.fill('#f-gpu', '1.5');
  await page.click('button:text("Submit job")');
  await page.locator('[data-field="gpu"] .fielderr:not(:empty)').waitFor();
  const gpuErr = await page.locator('[data-field="gpu"] .fielderr').textContent();
  check(gpuErr.length > 0 && await page.getAttribute('#f-gpu', 'aria-invalid') === 'true',
    `new job: the API's error for gpu=1.5 is shown beside the GPU field ("${gpuErr}")`);
  await shot(page, '03-newjob-error');
  await page.fill('#f-gpu', '0.25');
  await page.fill('#f-gpu_mem', 'lots');
  await page.click('button:text("Submit job")');
  await page.locator('[data-field="gpu_mem"] .fielderr:not(:empty)').waitFor();
  check(await page.locator('[data-field="gpu"] .fielderr').textContent() === '', 'new job: a corrected field loses its error');
  check((await page.locator('[data-field="gpu_mem"] .fielderr').textContent()).includes('gpu_mem'), 'new job: an unparsable GPU memory is refused beside its field');
  check((await a11y(page)).length === 0, 'new job: every control is labelled', await a11y(page));
  await page.fill('#f-name', 'console-demo');
  await page.fill('#f-command', 'echo hello-from-console; i=0; while [ $i -lt 3000 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done');
  await page.fill('#f-gpu_mem', '2G');
  await page.fill('#f-priority', '3');
  await page.click('button:text("Submit job")');
  await page.waitForURL(/#\/jobs\/\d+$/);
  const jobId = Number(page.url().match(/#\/jobs\/(\d+)$/)[1]);
  const submitted = (await api('GET', `/v1/jobs/${jobId}`)).body;
  check(submitted.name === 'console-demo' && submitted.gpu_milli === 250 && submitted.gpu_mem === 2 * 2 ** 30 && submitted.priority === 3 && submitted.shell === true,
    `new job: the form submitted job ${jobId} with the fields as typed (0.25 GPU, 2G, priority 3, shell)`, JSON.stringify(submitted));

  // ---- job detail: watch it run, logs streaming -------------------------------------------------
  await page.locator('main h1 .badge.st-running').waitFor();
  check(true, 'job detail: the state reaches running without a reload');
  await page.waitForFunction(() => document.querySelector('#log-stdout')?.textContent.includes('hello-from-console'));
  check(true, 'job detail: the job\'s first output line appears');
  await page.waitForFunction(() => /tick 2\d/.test(document.querySelector('#log-stdout')?.textContent || ''));
  check((await page.locator('#log-stdout').textContent()).includes('tick 0\n'), 'job detail: later output streams in (tick 20..29 after tick 0) without a reload');
  check(/live/.test(await page.locator('#log-stdout-status').textContent()), 'job detail: the log is marked live while the job runs');
  check((await a11y(page)).length === 0, 'job detail: every control is labelled', await a11y(page));
  await shot(page, '04-job-running');

  // ---- suspend and resume its GPU work (a job with a GPU that runs) -------------------------------
  await page.click(`button[aria-label="Suspend job ${jobId}"]`);
  await page.locator('main h1 .badge.st-suspended').waitFor();
  const susp = (await api('GET', `/v1/jobs/${jobId}`)).body;
  check(susp.state === 'suspended' && susp.drained === true,
    `suspend: the Suspend button suspends job ${jobId} (API: ${susp.state}, drained ${susp.drained})`);
  check(await page.evaluate(() => document.activeElement?.id) === 'suspend-toggle'
    && (await page.locator('#suspend-toggle').textContent()) === 'Resume'
    && await page.locator('#suspend-toggle').getAttribute('aria-label') === `Resume job ${jobId}`,
  'suspend: the button becomes a labelled Resume and keeps the keyboard focus');
  check((await a11y(page)).length === 0, 'suspend: every control is labelled', await a11y(page));
  await shot(page, '04b-job-suspended');
  await page.click(`button[aria-label="Resume job ${jobId}"]`);
  await page.locator('main h1 .badge.st-running').waitFor();
  check((await api('GET', `/v1/jobs/${jobId}`)).body.state === 'running', `resume: job ${jobId} runs again`);

  // ---- cancel it ---------------------------------------------------------------------------------
  await page.click(`button[aria-label="Cancel job ${jobId}"]`);
  await page.click('button:text("Yes, cancel job")');
  await page.locator('main h1 .badge.st-cancelled').waitFor();
  const cancelled = (await api('GET', `/v1/jobs/${jobId}`)).body;
  check(cancelled.state === 'cancelled', `cancel: job ${jobId} is cancelled (API says ${cancelled.state})`);
  await page.waitForFunction(() => /complete/.test(document.querySelector('#log-stdout-status')?.textContent || ''));
  check(true, 'cancel: the log stream ends when the job has ended');
  await shot(page, '05-job-cancelled');

  // A short job that succeeds, submitted by the API, seen in the list.
  // Its name is HTML: the console must show it as text, never run it.
  const quick = (await api('POST', '/v1/jobs', { argv: ['sh', '-c', 'echo quick'], name: '<img src=x onerror="window.__xss=1">quick' })).body;
  await waitState(quick.id, 'succeeded');

  // ---- jobs list with filters -----------------------------------------------------------------
  await page.click('#nav a[data-page="jobs"]');
  await page.locator(`tr[data-job="${quick.id}"][data-state="succeeded"]`).waitFor();
  check(await page.evaluate((id) => window.__xss === undefined && !document.querySelector('td img')
    && document.querySelector(`tr[data-job="${id}"] td.cmd strong`).textContent.startsWith('<img'), quick.id),
    'jobs: a job name made of HTML is shown as text, not run');
  check(await page.locator('tr[data-job]').count() === 5, 'jobs: the list shows all five jobs (the admin sees alice\'s too)');
  await page.selectOption('#f-state', 'cancelled');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-job]').length === 1);
  check(await page.locator(`tr[data-job="${jobId}"]`).count() === 1 && page.url().includes('state=cancelled'),
    'jobs: the state filter keeps only the cancelled job, and is kept in the URL');
  await page.selectOption('#f-state', '');
  await page.selectOption('#f-user', 'alice');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-job]').length === 2);
  check(await page.locator(`tr[data-job="${held.id}"]`).count() === 1 && await page.locator(`tr[data-job="${waiting.id}"][data-state="pending"]`).count() === 1,
    'jobs: the user filter keeps only alice\'s two jobs (one running, one pending)');
  const why = page.locator(`tr[data-job="${waiting.id}"] .reason[data-code="Resources"]`);
  await why.waitFor();
  check((await why.textContent()).startsWith('Resources: no GPU has 0.75 free'),
    'jobs: the pending job says why it waits (its reason code, which GPU comes closest)');
  await page.selectOption('#f-user', '');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-job]').length === 5);
  check((await a11y(page)).length === 0, 'jobs: every control is labelled', await a11y(page));
  await shot(page, '06-jobs');

  // ---- queues: create one, edit the default queue's quota (admin) ----------------------------
  await page.click('#nav a[data-page="queues"]');
  await page.locator('tr[data-queue="default"]').waitFor();
  await page.fill('#nq-name', 'big');
  await page.fill('#nq-guarantee-gpu', '1');
  await page.fill('#nq-limit-gpu', '2');
  await page.fill('#nq-limit-gpu_mem', '40G');
  await page.fill('#nq-weight', '2');
  await page.fill('#nq-priority', '10');
  await page.fill('#nq-idle_reclaim', '30m');
  await page.click('button:text("Create queue")');
  await page.locator('tr[data-queue="big"]').waitFor();
  const bigq = (await api('GET', '/v1/queues/big')).body;
  check(bigq.guarantee?.gpu === 1 && bigq.limit?.gpu === 2 && bigq.limit?.gpu_mem === 40 * 2 ** 30 && bigq.weight === 2 && bigq.priority === 10,
    'queues: the admin creates queue "big" (guarantee 1 GPU, limit 2 GPUs and 40G of GPU memory, weight 2)', JSON.stringify(bigq));
  check(bigq.idle_reclaim === 1800 && await page.locator('tr[data-queue="big"] td[data-col="idle_reclaim"]').textContent() === '30m'
    && await page.locator('tr[data-queue="default"] td[data-col="idle_reclaim"]').textContent() === 'never',
    'queues: the idle reclaim typed at creation (30m) is the API\'s 1800 s and the table says 30m; the default queue never', JSON.stringify(bigq.idle_reclaim));
  check(await page.locator('tr[data-queue="default"] td[data-col="gpu_mem_oversubscribe"]').textContent() === 'none',
    'queues: the default queue\'s oversubscription column says none (its value in effect is 0)');
  await page.click('button[aria-label="Edit queue default"]');
  await page.fill('#eq-limit-gpu', '1.5');
  await page.fill('#eq-guarantee-gpu', '2');
  await page.click('#queue-editor button:text("Save")');
  await page.locator('#queue-editor [data-field="guarantee.gpu"] .fielderr:not(:empty)').waitFor();
  check(await page.getAttribute('#eq-guarantee-gpu', 'aria-invalid') === 'true',
    `queues: a guarantee above the limit is refused by the API, the error beside the guarantee's GPU field ("${await page.locator('#queue-editor [data-field="guarantee.gpu"] .fielderr').textContent()}")`);
  await page.fill('#eq-guarantee-gpu', '0.5');
  await page.fill('#eq-weight', '3');
  await page.click('#queue-editor button:text("Save")');
  await page.locator('tr[data-queue="default"] td[data-col="limit"]:text("1.5 GPU")').waitFor();
  const def = (await api('GET', '/v1/queues/default')).body;
  check(def.weight === 3 && def.guarantee?.gpu === 0.5 && def.limit?.gpu === 1.5 && def.max_gpu_milli === 1500,
    `queues: the admin's edit changed the default queue's quota (API: weight ${def.weight}, guarantee.gpu ${def.guarantee?.gpu}, limit.gpu ${def.limit?.gpu})`, JSON.stringify(def));
  check(await page.locator('tr[data-queue="default"] td[data-col="guarantee"]').textContent() === '0.5 GPU'
    && await page.locator('tr[data-queue="default"] td[data-col="weight"]').textContent() === '3', 'queues: the table shows the new guarantee and weight');
  // Who may submit: the admin admits alice alone to "big"; a bad role is refused beside its field.
  check(await page.locator('tr[data-queue="big"] td[data-col="allow"]').textContent() === 'everyone',
    'queues: a new queue admits everyone');
  await page.click('button[aria-label="Edit queue big"]');
  await page.fill('#eq-allow-users', 'alice');
  await page.fill('#eq-allow-roles', 'root');
  await page.click('#queue-editor button:text("Save")');
  await page.locator('#queue-editor [data-field="allow.roles"] .fielderr:not(:empty)').waitFor();
  check(await page.getAttribute('#eq-allow-roles', 'aria-invalid') === 'true'
    && (await api('GET', '/v1/queues/big')).body.allow?.users?.length === 0,
    `queues: a role other than admin and user is refused beside the roles field, nothing saved ("${await page.locator('#queue-editor [data-field="allow.roles"] .fielderr').textContent()}")`);
  await page.fill('#eq-allow-roles', '');
  await page.click('#queue-editor button:text("Save")');
  await page.locator('tr[data-queue="big"] td[data-col="allow"]:text("users alice")').waitFor();
  const bigAllow = (await api('GET', '/v1/queues/big')).body.allow;
  check(JSON.stringify(bigAllow) === '{"users":["alice"],"groups":[],"roles":[]}',
    'queues: the admin admits alice alone to "big" (API and table agree)', JSON.stringify(bigAllow));
  check((await a11y(page)).length === 0, 'queues: every control is labelled', await a11y(page));
  await shot(page, '07-queues');

  // ---- users and tokens (admin) ---------------------------------------------------------------
  await page.click('#nav a[data-page="users"]');
  await page.locator('tr[data-user="alice"]').waitFor();
  await page.fill('#nu-name', 'bob');
  await page.click('button:text("Add user")');
  await page.locator('#new-token').waitFor();
  const bobTok = (await page.locator('#new-token').textContent()).trim();
  const bobWho = (await api('GET', '/v1/whoami', undefined, bobTok)).body;
  check(/^tsl_[0-9a-f]{64}$/.test(bobTok) && bobWho.user === 'bob', 'users: the admin adds bob; the token shown once works for bob');
  await page.locator('tr[data-user="bob"]').waitFor();
  check((await a11y(page)).length === 0, 'users: every control is labelled', await a11y(page));
  await shot(page, '08-users');

  // ---- dark colour scheme ------------------------------------------------------------------------
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.click('#nav a[data-page="overview"]');
  await page.locator('section.gpu .chart[data-drawn]').first().waitFor();
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check(bg !== 'rgb(246, 247, 249)', `dark scheme: the page follows prefers-color-scheme (${bg})`);
  await shot(page, '09-overview-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // ---- phone width -----------------------------------------------------------------------------
  await page.setViewportSize({ width: 375, height: 812 });
  for (const [p, name] of [['overview', 'overview'], ['jobs', 'jobs'], ['new', 'newjob'], ['queues', 'queues']]) {
    await page.click(`#nav a[data-page="${p}"]`);
    await page.locator('main h1').waitFor();
    await page.waitForTimeout(300);
    check(await noOverflow(page), `375 px: the ${name} page fits the width (no sideways scrolling)`);
    await shot(page, `10-phone-${name}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });

  // ---- sign out; a user sees only her own ---------------------------------------------------
  await page.click('#signout');
  await page.locator('form.signin').waitFor();
  check(await page.evaluate(() => !sessionStorage.getItem('tessel.token') && !localStorage.getItem('tessel.token')), 'sign-out forgets the token');
  await page.fill('#token', aliceTok);
  await page.check('#remember');
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();
  check(await page.evaluate(() => localStorage.getItem('tessel.token') !== null), '"Remember me" keeps the token in localStorage');
  await page.click('#nav a[data-page="jobs"]');
  await page.locator(`tr[data-job="${held.id}"]`).waitFor();
  check(await page.locator('tr[data-job]').count() === 2 && await page.locator('#f-user').count() === 0,
    'as alice: the list holds only her two jobs, and there is no user filter');
  check(await page.locator('#nav-users').textContent() === 'Tokens', 'as alice: the users page is only "Tokens"');
  await page.click('#nav a[data-page="queues"]');
  await page.locator('tr[data-queue="default"]').waitFor();
  check(await page.locator('button[aria-label^="Edit queue"]').count() === 0 && await page.locator('#nq-name').count() === 0,
    'as alice: queues are read-only');
  await page.reload();
  await page.locator('main h1:text("Queues")').waitFor();
  check(true, 'a reload keeps the remembered session and the page');

  check(consoleErrors.length === 0, 'no JavaScript error in the browser console', consoleErrors.join('\n'));
  await context.close();
} catch (e) {
  check(false, `browser session ran to its end: ${e.message}`, e.stack);
} finally {
  await browser.close();
  if (WORK) writeFileSync(join(WORK, 'release'), '');
}
process.exit(failures ? 1 : 0);
