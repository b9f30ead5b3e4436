// cluster.mjs - the console's overview of a Slurm cluster (tesseld --slurm) in a real browser
// (Debian's Chromium, driven by playwright-core).  Run by tests/t/t9011-slurm-console.t, which
// starts the test cluster, an exporter on each node, tesseld and the jobs, and passes:
//
//   TESSEL_URL    http://127.0.0.1:PORT of the tesseld under test
//   TESSEL_ADMIN  the admin token
//   SHOTS         directory for the screenshots
//   PHASE         "up": both nodes answer, jobs on both; "down": NODE_DOWN stopped answering
//   JOB           Tessel's id of the job submitted through tesseld; SLURM_ONLY: the Slurm id of
//                 a job sbatch'd directly; NODE_DOWN: the node whose exporter was stopped
//
// Prints one line per check, "PASS text" or "FAIL text", and exits non-zero if it could not run
// to the end.  Every wait is bounded (WAIT_MS); no check is about time.

import { launch } from './chromium.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const URL = process.env.TESSEL_URL;
const ADMIN = process.env.TESSEL_ADMIN;
const SHOTS = process.env.SHOTS;
const PHASE = process.env.PHASE;
const JOB = process.env.JOB;
const SLURM_ONLY = process.env.SLURM_ONLY;
const NODE_DOWN = process.env.NODE_DOWN;
const WAIT_MS = 30000;
mkdirSync(SHOTS, { recursive: true });

let failures = 0;
function check(cond, text, detail) {
  console.log(`${cond ? 'PASS' : 'FAIL'} ${text}`);
  if (!cond) { failures++; if (detail !== undefined) console.log(`# ${String(detail).split('\n').join('\n# ')}`); }
  return cond;
}

async function api(path) {
  const res = await fetch(URL + path, { headers: { Authorization: `Bearer ${ADMIN}` } });
  return res.json();
}

const browser = await launch(['--disable-quic']);
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text()); });

  await page.goto(URL + '/');
  await page.locator('form.signin').waitFor();
  await page.fill('#token', ADMIN);
  await page.click('button[type=submit]');
  await page.locator('main h1:text("Overview")').waitFor();
  const api0 = await api('/v1/gpus');
  await page.locator('section.gpu').nth(api0.gpus.length - 1).waitFor();
  const cards = await page.locator('section.gpu').evaluateAll((els) => els.map((e) => ({
    node: e.dataset.node, title: e.querySelector('h3').textContent, state: e.querySelector('.node-state')?.dataset.nodeState || 'up',
  })));
  check(cards.length === 4 && cards.map((c) => c.node).join(' ') === 'n1 n1 n2 n2',
    'overview: the cluster\'s four GPUs, node by node (two per node)', JSON.stringify(cards));
  check(cards.every((c) => /^n[12] · GPU [01] · FakeGPU/.test(c.title)), 'each card names its node, its GPU and model',
    cards.map((c) => c.title).join('\n'));
  const nodes = await page.locator('.stats dt:text("Nodes") + dd').textContent();

  if (PHASE === 'up') {
    check(/^2/.test(nodes) && /all up/.test(nodes), `summary: Nodes 2, all up (${nodes})`);
    check(cards.every((c) => c.state === 'up'), 'no card says its node is not up');
    // Tessel's job (a link to its page) and the job sbatch'd directly (its Slurm id), each in
    // its GPU's slice table, with the memory it holds now.
    await page.locator(`tr[data-job="${JOB}"]`).waitFor();
    await page.locator(`tr[data-job="s${SLURM_ONLY}"]`).waitFor();
    const row = await page.locator(`tr[data-job="${JOB}"]`).evaluate((r) => ({
      link: r.querySelector('a')?.getAttribute('href'), cells: [...r.cells].map((c) => c.textContent),
    }));
    const g = api0.gpus.flatMap((x) => x.slices.map((s) => ({ ...s, node: x.node }))).find((s) => s.job_id === Number(JOB));
    check(row.link === `#/jobs/${JOB}` && row.cells[1] === 'tslra', `job ${JOB}'s slice: a link to the job, its user`, JSON.stringify(row));
    check(g && /\d/.test(row.cells[4]) && !/^0 B/.test(row.cells[4]),
      `its memory used / limit as the node counts it now (${row.cells[4]})`);
    const other = await page.locator(`tr[data-job="s${SLURM_ONLY}"]`).evaluate((r) => [...r.cells].map((c) => c.textContent));
    check(other[0].includes(`Slurm ${SLURM_ONLY}`) && other[1] === 'tslrb',
      `the job sbatch'd directly: named by its Slurm id (${other[0]}), tslrb's`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SHOTS, 'console-cluster-overview.png'), fullPage: true });
  } else {
    check(new RegExp(`${NODE_DOWN} unreachable`).test(nodes), `summary: ${NODE_DOWN} unreachable (${nodes})`);
    await page.locator(`section.gpu[data-node="${NODE_DOWN}"] .node-state`).first().waitFor();
    const down = await page.locator(`section.gpu[data-node="${NODE_DOWN}"] .node-state`).allTextContents();
    check(down.length === 2 && down.every((t) => /node unreachable/.test(t) && /figures of/.test(t)),
      `both of ${NODE_DOWN}'s cards say so, with the time of its last figures (${down[0]})`);
    const up = await page.locator(`section.gpu:not([data-node="${NODE_DOWN}"]) .node-state`).count();
    check(up === 0, 'the other node\'s cards do not');
    await page.screenshot({ path: join(SHOTS, 'console-cluster-node-down.png'), fullPage: true });
  }
  check(errors.length === 0, 'no script error in the page', errors.join('\n'));
} catch (e) {
  console.log(`FAIL the session: ${e.message}`);
  failures++;
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
