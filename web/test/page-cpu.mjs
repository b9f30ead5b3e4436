// page-cpu.mjs - a probe (not a benchmark with a baseline): for each path in PATHS (space-
// separated; default /app/icon.svg), a fresh browser profile loads TESSEL_URL + path and the
// probe prints the wall time and the CPU time (user + system, from /proc) that Chromium's
// processes and threads spent on that load.  "#signin" in a path loads without a token (the
// sign-in page); "jobs" waits for the page's heading; "week" for the week view's charts.
//   TESSEL_URL=... TESSEL_ADMIN=... PATHS="/app/icon.svg /#signin /#signin /#/jobs" node web/test/page-cpu.mjs
// docs/console.md, "After the load-order changes".
import { launch } from './chromium.mjs';
import fs from 'fs';
const URL = process.env.TESSEL_URL;
function cpuOf(pid) { try { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (+f[11] + +f[12]); } catch { return 0; } }
function threads() { const per = {}; for (const p of fs.readdirSync('/proc')) { if (!/^\d+$/.test(p)) continue; try { const c = fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim(); if (!(c.startsWith('chrom') || c.startsWith('headless'))) continue; const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8'); const ty = (/--type=([a-z-]+)/.exec(cmd) || [, 'browser'])[1]; for (const t of fs.readdirSync(`/proc/${p}/task`)) { const st = fs.readFileSync(`/proc/${p}/task/${t}/stat`, 'utf8'); const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')); const f = st.split(') ')[1].split(' '); const k = ty + ':' + name.replace(/\d+$/, ''); per[k] = (per[k] || 0) + (+f[11] + +f[12]); } } catch {} } return per; }
function chromeCpu() { let s = 0; const per = {}; for (const p of fs.readdirSync('/proc')) { if (!/^\d+$/.test(p)) continue; try { const c = fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim(); if (c.startsWith('chrom') || c.startsWith('headless')) { const v = cpuOf(p); s += v; const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8'); const ty = (/--type=([a-z-]+)/.exec(cmd) || [, 'browser'])[1]; per[ty] = (per[ty] || 0) + v; } } catch {} } return [s, per]; }
const browser = await launch();
for (const path of (process.env.PATHS || '/app/icon.svg').split(' ')) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (!path.includes('signin')) await context.addInitScript((t) => sessionStorage.setItem('tessel.token', t), process.env.TESSEL_ADMIN);
  const page = await context.newPage();
  const [c0, p0] = chromeCpu(); const th0 = threads();
  const w0 = Date.now();
  await page.goto(URL + path);
  if (path.includes('jobs') || path.includes('signin')) await page.waitForSelector('main h1'); if (path.includes('week')) await page.waitForFunction(() => document.body.dataset.historyRendered === 'week' && document.querySelectorAll('section.gpu .chart[data-drawn]').length === 8, null, { polling: 'raf', timeout: 60000 });
  const [c1, p1] = chromeCpu();
  const d = {}; for (const k in p1) d[k] = (p1[k] - (p0[k] || 0)) * 10;
  const th1 = threads(); const dt = Object.entries(th1).map(([k, v]) => [k, (v - (th0[k] || 0)) * 10]).filter(([k, v]) => v >= 20).sort((a, b) => b[1] - a[1]);
  console.log('   threads:', JSON.stringify(dt));
  console.log(path, 'wall', Date.now() - w0, 'cpu', (c1 - c0) * 10, JSON.stringify(d));
  await context.close();
}
await browser.close();
