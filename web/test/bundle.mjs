// bundle.mjs - for t4051-console-bundle.t: a fresh load of the console's overview from a
// tesseld serving what `make` installs (WHAT=built: the first page as a bundle, app/b-main.js and
// its chunks, scripts/console-bundle.sh) or the sources (WHAT=sources: --web-root web), then a
// switch to the jobs page (a page imported when first shown).  Prints "PASS name" or
// "FAIL name" per check.
//
//   TESSEL_URL, TESSEL_ADMIN, WHAT (built or sources), GPUS (the tesseld's, default 2)
import { launch } from './chromium.mjs';

const GPUS = Number(process.env.GPUS || 2);
const check = (cond, name) => console.log(`${cond ? 'PASS' : 'FAIL'} ${name}`);
const browser = await launch();
try {
  {
    const what = process.env.WHAT, url = process.env.TESSEL_URL, token = process.env.TESSEL_ADMIN;
    if (what !== 'built' && what !== 'sources') throw new Error('WHAT: built or sources');
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript((t) => sessionStorage.setItem('tessel.token', t), token);
    const page = await context.newPage();
    const scripts = [];
    const errors = [];
    page.on('request', (r) => { if (r.resourceType() === 'script') scripts.push(new URL(r.url()).pathname); });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url + '/#/', { timeout: 120000 });
    await page.waitForFunction((n) => document.querySelectorAll('section.gpu').length === n
      && document.querySelector('main h1')?.textContent === 'Overview', GPUS, { timeout: 60000 });
    const first = [...new Set(scripts)].sort();
    if (what === 'built') {
      check(first.length === 2 && first.includes('/app/b-main.js') && first.every((p) => /^\/app\/b-[A-Za-z0-9_-]+\.js$/.test(p)),
        `built console: the first page reads 2 module files, the bundle (${first.join(' ')})`);
    } else {
      check(first.includes('/app/main.js') && first.includes('/app/overview.js') && first.includes('/app/chart.js')
        && !first.some((p) => p.includes('/b-')),
        `the sources (--web-root web): the first page reads the modules themselves (${first.join(' ')})`);
    }
    check(await page.locator('section.gpu .chart').count() === GPUS, `${what}: the overview shows a chart box per GPU (${GPUS})`);
    const n = scripts.length;
    await page.click('#nav a[data-page="jobs"]');
    await page.waitForFunction(() => document.querySelector('main h1')?.textContent.startsWith('Jobs'), null, { timeout: 60000 });
    const later = scripts.slice(n);
    check(later.includes(what === 'built' ? '/app/b-jobs.js' : '/app/jobs.js'),
      `${what}: the jobs page's module is read when the page is first shown (${later.join(' ')})`);
    check(errors.length === 0, `${what}: no script error on the page (${errors.join('; ')})`);
    await context.close();
  }
} finally {
  await browser.close();
}
