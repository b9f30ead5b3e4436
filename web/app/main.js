// main.js - the console's shell: sign-in, the page router (on the URL's hash), and the live
// store that every page reads, refreshed by polling tesseld every POLL_MS.
//
// Why polling: the API has no event stream; one poll is three small requests (GPUs, queues,
// jobs changed since the last poll), cheap on tesseld, and 2 s is as fresh as a person
// watching a bar needs.  A hidden tab polls every HIDDEN_POLL_MS.  The usage history comes
// from tesseld (history.js).  Job logs are streamed, not polled (api.js followLog).

import { api, getToken, setToken, clearToken, setUnauthorizedHandler, ApiError } from './api.js';
import { h, clear, ACTIVE } from './util.js';
import { forget as forgetHistory, prefetch as prefetchHistory } from './history.js';
import * as overview from './overview.js';

const POLL_MS = 2000;
const HIDDEN_POLL_MS = 10000;
// Jobs fetched per request when catching up (the API's default and maximum page is larger;
// this keeps each answer small).
const PAGE = 500;

export const store = {
  me: null,          // {user, role, token_id}
  admin: false,
  health: null,      // /healthz
  gpus: [],
  queues: [],
  jobs: new Map(),   // id -> job (every job this token may see)
  maxId: 0,
  // tesseld --slurm: the jobs submitted to Slurm directly that this token may see (read-only,
  // id "slurm:N", GET /v1/jobs?origin=slurm); empty on one box.
  slurmJobs: [],
  online: true,
  error: null,
  updatedAt: 0,
};

// The overview (the page a fresh load shows most) comes with the shell; every other page's
// module is asked for when it is first shown, so that a fresh load reads and compiles only
// what its first page needs (docs/console.md, "Load order").
const pages = {
  overview,
  jobs: () => import('./jobs.js'),
  job: () => import('./job.js'),
  terminal: () => import('./terminal.js'),
  new: () => import('./newjob.js'),
  queues: () => import('./queues.js'),
  users: () => import('./users.js'),
  projects: () => import('./projects.js'),
  project: () => import('./projects.js'),
  folders: () => import('./folders.js'),
  folder: () => import('./folders.js'),
  services: () => import('./services.js'),
};
let routeSeq = 0;   // the newest route(): an older one whose module arrives later gives way

// A page's module, imported on its first use.
async function pageModule(name) {
  if (typeof pages[name] === 'function') pages[name] = await pages[name]();
  return pages[name];
}
let current = null;  // {name, mod, ctx}
let pollTimer = null;
let polling = false;
let started = false;

const $ = (id) => document.getElementById(id);

// ---- jobs: keep the store's map in step with tesseld ------------------------------------------

async function syncJobs() {
  // New jobs (paging with after=) and the active ones (their state moves), asked at once; then
  // those the store had as active that are neither (they finished since the last poll).
  const activeAnswer = api.jobs({ state: 'active' });
  activeAnswer.catch(() => {}); // awaited below: no unhandled rejection if paging throws first
  for (;;) {
    const { jobs: list } = await api.jobs({ after: store.maxId, limit: PAGE });
    for (const j of list) { store.jobs.set(j.id, j); if (j.id > store.maxId) store.maxId = j.id; }
    if (list.length < PAGE) break;
  }
  const { jobs: active } = await activeAnswer;
  const seen = new Set();
  for (const j of active) { store.jobs.set(j.id, j); seen.add(j.id); }
  const stale = [...store.jobs.values()].filter((j) => ACTIVE.has(j.state) && !seen.has(j.id));
  await Promise.all(stale.map(async (j) => {
    try { store.jobs.set(j.id, await api.job(j.id)); } catch (e) {
      if (e.status === 404) store.jobs.delete(j.id); else throw e;
    }
  }));
}

// A page that changed something asks for a poll now rather than in up to 2 s.
export function refresh() {
  clearTimeout(pollTimer);
  return poll();
}

async function poll() {
  if (polling) return;
  polling = true;
  try {
    const [g, q, d] = await Promise.all([api.gpus(), api.queues(),
      api.jobs({ origin: 'slurm', order: 'desc', limit: 1000 }), syncJobs()]);
    store.slurmJobs = (d.jobs || []).filter((j) => j.origin === 'slurm');
    store.gpus = g.gpus;
    store.nodes = g.nodes || null; // tesseld --slurm: the cluster's nodes and their states
    store.queues = q.queues;
    store.updatedAt = Date.now();
    setOnline(true);
  } catch (e) {
    if (!getToken()) return;
    store.error = e;
    setOnline(false, e);
  } finally {
    polling = false;
  }
  if (getToken()) {
    current?.mod.update?.(current.ctx, store);
    pollTimer = setTimeout(poll, document.hidden ? HIDDEN_POLL_MS : POLL_MS);
  }
}

function setOnline(on, e) {
  const live = $('live');
  if (on === store.online && live.textContent) return;
  store.online = on;
  live.className = on ? 'live on' : 'live off';
  live.textContent = on ? 'Live' : `Connection lost: ${e?.message || 'no answer'}; retrying`;
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && getToken() && started) refresh();
});

// ---- routing -------------------------------------------------------------------------------------

function parseRoute() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?');
  const parts = path.split('/').filter(Boolean);
  const params = new URLSearchParams(query || '');
  if (parts.length === 0) return { name: 'overview', params };
  if (parts[0] === 'jobs' && parts[1] && parts[2] === 'terminal' && !parts[3]) return { name: 'terminal', id: Number(parts[1]), params };
  if (parts[0] === 'jobs' && parts[1]) return { name: 'job', id: Number(parts[1]), params };
  if (parts[0] === 'projects' && parts[1]) {
    let project = parts[1];
    try { project = decodeURIComponent(project); } catch { /* a malformed escape: as typed (tesseld answers 404) */ }
    return { name: 'project', project, params };
  }
  if (parts[0] === 'folders' && parts[1]) {
    let folder = parts[1];
    try { folder = decodeURIComponent(folder); } catch { /* as typed (tesseld answers 404) */ }
    return { name: 'folder', folder, params };
  }
  if (pages[parts[0]]) return { name: parts[0], params };
  return { name: 'notfound', params };
}

async function route() {
  if (!getToken() || !store.me) return;
  const r = parseRoute();
  const seq = ++routeSeq;
  let mod = null, loadError = null;
  if (r.name !== 'notfound') {
    try { mod = await pageModule(r.name); } catch (e) { loadError = e; }
    if (seq !== routeSeq || !getToken() || !store.me) return;
  }
  if (current) { current.mod.unmount?.(current.ctx); current = null; }
  const main = $('main');
  clear(main);
  for (const a of document.querySelectorAll('#nav a')) {
    const active = a.dataset.page === r.name || ((r.name === 'job' || r.name === 'terminal') && a.dataset.page === 'jobs')
      || (r.name === 'project' && a.dataset.page === 'projects')
      || (r.name === 'folder' && a.dataset.page === 'folders');
    if (active) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (r.name === 'notfound') {
    main.append(h('h1', { tabindex: -1 }, 'Not found'), h('p', {}, 'No such page. ', h('a', { href: '#/' }, 'Back to the overview')));
    document.title = 'Not found · Tessel';
  } else if (loadError) {
    main.append(h('h1', { tabindex: -1 }, 'Page not loaded'),
      h('p', { class: 'error', role: 'alert' }, `This page could not be loaded from tesseld (${loadError.message}). `,
        h('button', { type: 'button', class: 'btn small', onclick: () => route() }, 'Try again')));
    document.title = 'Page not loaded · Tessel';
  } else {
    const ctx = { root: main, route: r, store, refresh, navigate };
    mod.mount(ctx, store);
    current = { name: r.name, mod, ctx };
    document.title = `${ctx.title || r.name} · Tessel`;
  }
  // Move focus to the page's heading so that keyboard and screen-reader users land on it.
  const h1 = main.querySelector('h1');
  if (h1) { h1.setAttribute('tabindex', '-1'); h1.focus({ preventScroll: true }); }
  window.scrollTo(0, 0);
}

export function navigate(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

window.addEventListener('hashchange', route);

// ---- sign-in / sign-out --------------------------------------------------------------------------

function showSignIn(message) {
  $('top').hidden = true;
  $('simbanner').hidden = true;
  const main = $('main');
  const err = h('p', { class: 'error', id: 'signin-error', role: 'alert' }, message || '');
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, 'aria-describedby': 'token-help signin-error', placeholder: 'tsl_…',
  });
  const remember = h('input', { id: 'remember', type: 'checkbox' });
  const form = h('form', { class: 'signin card', novalidate: true },
    h('h1', {}, h('img', { src: 'app/icon.svg', alt: '', width: 28, height: 28 }), ' Sign in to Tessel'),
    h('label', { for: 'token' }, 'Access token'),
    input,
    h('p', { class: 'help', id: 'token-help' },
      'Your token starts with ', h('code', {}, 'tsl_'), '. An admin gives you one (',
      h('code', {}, 'tessel users add'), '); the first admin token is in ', h('code', {}, '<data-dir>/admin.token'), '.'),
    h('div', { class: 'check' }, remember, h('label', { for: 'remember' }, 'Remember me on this device')),
    h('p', { class: 'help' }, 'Without it, the token is kept for this browser tab only.'),
    err,
    h('button', { type: 'submit', class: 'btn primary' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) { err.textContent = 'Enter your token.'; input.setAttribute('aria-invalid', 'true'); input.focus(); return; }
    err.textContent = '';
    try {
      const me = await api.whoami(token);
      setToken(token, remember.checked);
      await start(me);
    } catch (e) {
      input.setAttribute('aria-invalid', 'true');
      err.textContent = e instanceof ApiError && e.status === 401
        ? 'This token is not valid (unknown, revoked or mistyped).'
        : `Cannot sign in: ${e.message}`;
      input.focus();
    }
  });
  clear(main, form);
  document.title = 'Sign in · Tessel';
  input.focus();
}

function signOut(message) {
  clearToken();
  clearTimeout(pollTimer);
  if (current) { current.mod.unmount?.(current.ctx); current = null; }
  started = false;
  store.me = null;
  store.jobs = new Map();
  store.slurmJobs = [];
  store.maxId = 0;
  // The next person may not read the same users' history; they start at the overview.
  forgetHistory();
  window.history.replaceState(null, '', '#/');
  showSignIn(message);
}

setUnauthorizedHandler(() => {
  if (started) signOut('Your session ended: tesseld no longer accepts this token. Sign in again.');
});

// early: what boot() asked for beside the token's check ({health, poll, history}: promises).
async function start(me, early = {}) {
  store.me = me;
  store.admin = me.role === 'admin';
  store.health = await (early.health || api.health().catch(() => null));
  $('top').hidden = false;
  $('simbanner').hidden = !store.health?.simulated;
  $('whoami').textContent = `${me.user} (${me.role})`;
  $('nav-users').textContent = store.admin ? 'Users & tokens' : 'Tokens';
  started = true;
  // The overview's history too (asked at once beside the poll): the page is then built with its
  // charts in one task and one layout (overview.js), not drawn again when the answers come.
  const history = early.history || prefetchHistory();
  await Promise.all([(early.poll || poll()).catch(() => {}), history]);
  route();
}

$('signout').addEventListener('click', () => signOut('Signed out.'));

async function boot() {
  const token = getToken();
  if (!token) return showSignIn();
  // A saved token: ask for everything the first page needs at once, beside the token's check
  // (one round trip instead of four in a row).  Nothing is shown before whoami answers; a
  // refused token signs out, which forgets the history asked for meanwhile.
  const early = { history: prefetchHistory(), health: api.health().catch(() => null), poll: poll() };
  try {
    await start(await api.whoami(token), early);
  } catch (e) {
    if (e.status === 401) signOut('Your saved token is no longer valid. Sign in again.');
    else showSignIn(`Cannot reach tesseld: ${e.message}`);
  }
}

boot();
