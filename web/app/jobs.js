// jobs.js - the list of jobs with filters (state, user, queue, text), newest first, with a
// cancel button on active jobs.  With tesseld --slurm the jobs submitted to Slurm directly are
// listed too, read-only (id slurm:N, a "Slurm" badge, no cancel: Tessel does not act on them).  The filters live in the URL (#/jobs?state=running&queue=x) so a
// filtered list can be bookmarked or shared.

import { api } from './api.js';
import { h, clear, ago, duration, command, jobGpu, bytes, stateBadge, ACTIVE } from './util.js';
import { confirmButton, keepFocus, flash } from './widgets.js';

const STATES = ['pending', 'running', 'suspended', 'succeeded', 'failed', 'cancelled', 'preempted'];
const STEP = 100; // rows shown, then "Show more"

export function mount(ctx, store) {
  ctx.title = 'Jobs';
  const p = ctx.route.params;
  ctx.filter = { state: p.get('state') || '', user: p.get('user') || '', queue: p.get('queue') || '', q: p.get('q') || '' };
  ctx.shown = STEP;
  ctx.sig = '';
  const sel = (id, label, options, value) => {
    const s = h('select', { id, name: id }, options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)));
    s.addEventListener('change', () => setFilter(ctx, store, id.replace('f-', ''), s.value));
    return h('div', { class: 'field' }, h('label', { for: id }, label), s);
  };
  ctx.userSel = sel('f-user', 'User', [['', 'Everyone']], ctx.filter.user);
  ctx.queueSel = sel('f-queue', 'Queue', [['', 'All queues']], ctx.filter.queue);
  const search = h('input', { id: 'f-q', type: 'search', value: ctx.filter.q, placeholder: 'name, command or id' });
  search.addEventListener('input', () => setFilter(ctx, store, 'q', search.value));
  ctx.count = h('p', { class: 'sub', role: 'status', 'aria-live': 'polite' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.more = h('div', {});
  ctx.msg = h('div', { role: 'alert' });
  ctx.root.append(
    h('div', { class: 'pagehead' }, h('h1', {}, 'Jobs'), h('a', { class: 'btn primary', href: '#/new' }, 'New job')),
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs', onsubmit: (e) => e.preventDefault() },
      sel('f-state', 'State', [['', 'Any state'], ['active', 'Active (pending, running or suspended)'], ['finished', 'Finished'],
        ...STATES.map((s) => [s, s[0].toUpperCase() + s.slice(1)])], ctx.filter.state),
      store.admin ? ctx.userSel : null,
      ctx.queueSel,
      h('div', { class: 'field grow' }, h('label', { for: 'f-q' }, 'Search'), search)),
    ctx.msg, ctx.count, ctx.table, ctx.more);
  update(ctx, store);
}

function setFilter(ctx, store, key, value) {
  ctx.filter[key] = value;
  ctx.shown = STEP;
  const q = new URLSearchParams(Object.entries(ctx.filter).filter(([, v]) => v));
  window.history.replaceState(null, '', '#/jobs' + (q.toString() ? '?' + q : ''));
  update(ctx, store);
}

function matches(j, f) {
  if (f.state === 'active' && !ACTIVE.has(j.state)) return false;
  if (f.state === 'finished' && ACTIVE.has(j.state)) return false;
  if (f.state && f.state !== 'active' && f.state !== 'finished' && j.state !== f.state) return false;
  if (f.user && j.user !== f.user) return false;
  if (f.queue && j.queue !== f.queue) return false;
  if (f.q) {
    const q = f.q.toLowerCase();
    if (!(String(j.id) === q.replace(/^#/, '') || (j.name || '').toLowerCase().includes(q) || command(j).toLowerCase().includes(q))) return false;
  }
  return true;
}

function syncOptions(select, values, allLabel) {
  const cur = select.querySelector('select');
  const want = ['', ...values];
  const have = [...cur.options].map((o) => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const v = cur.value;
  clear(cur, want.map((x) => h('option', { value: x, selected: x === v }, x || allLabel)));
}

export function update(ctx, store) {
  const all = [...store.jobs.values(), ...(store.slurmJobs || [])];
  syncOptions(ctx.userSel, [...new Set(all.map((j) => j.user).concat(ctx.filter.user || []))].filter(Boolean).sort(), 'Everyone');
  syncOptions(ctx.queueSel, [...new Set(store.queues.map((q) => q.name).concat(ctx.filter.queue || []))].filter(Boolean).sort(), 'All queues');
  // Newest first: by submission time (Tessel's ids and Slurm's are apart), then by id.
  const when = (j) => Date.parse(j.submitted_at) || 0;
  const num = (j) => (typeof j.id === 'number' ? j.id : j.slurm_id || 0);
  const list = all.filter((j) => matches(j, ctx.filter)).sort((a, b) => when(b) - when(a) || num(b) - num(a));
  const rows = list.slice(0, ctx.shown);
  const now = Date.now();
  // Rebuild only when something visible changed (keeps focus and selection steady).
  const sig = rows.map((j) => `${j.id}:${j.state}:${j.reason}:${j.started_at}:${j.finished_at}:${j.gpu_released}`).join('|') + `#${Math.floor(now / 10000)}`;
  ctx.count.textContent = `${list.length} job${list.length === 1 ? '' : 's'}${list.length > rows.length ? `, newest ${rows.length} shown` : ''}`;
  if (sig === ctx.sig) return;
  ctx.sig = sig;
  if (!rows.length) {
    clear(ctx.table, h('p', { class: 'empty' }, all.length ? 'No job matches these filters.' : 'No job yet. ', all.length ? null : h('a', { href: '#/new' }, 'Submit one.')));
    clear(ctx.more);
    return;
  }
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data jobs' },
    h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
    h('thead', {}, h('tr', {}, ['ID', 'Name / command', 'User', 'Queue', 'State', 'GPU', 'GPU memory', 'Placed on', 'Submitted', 'Run time', '']
      .map((t, i) => h('th', { scope: 'col', class: [0, 5, 6, 9].includes(i) ? 'num' : null }, t ? t : h('span', { class: 'sr-only' }, 'Actions'))))),
    h('tbody', {}, rows.map((j) => h('tr', { 'data-job': j.id, 'data-state': j.state },
      h('td', { class: 'num', 'data-label': 'ID' }, j.origin === 'slurm'
        ? h('span', { title: 'submitted to Slurm directly (sbatch): shown read-only' }, j.id, ' ', h('span', { class: 'badge' }, 'Slurm'))
        : h('a', { href: `#/jobs/${j.id}`, 'aria-label': `Job ${j.id}` }, `#${j.id}`)),
      h('td', { class: 'cmd', 'data-label': 'Command' }, j.name ? h('strong', {}, j.name, ' ') : null, h('code', {}, command(j))),
      h('td', { 'data-label': 'User' }, j.user),
      h('td', { 'data-label': 'Queue' }, j.queue),
      h('td', { 'data-label': 'State' }, h('span', {}, stateBadge(j.state, j.reason), j.simulated ? h('span', { class: 'badge sim', title: 'placed on simulated GPUs' }, 'sim') : null,
        j.state === 'pending' && j.reason ? h('span', { class: 'reason', 'data-code': j.reason_code || null }, j.reason) : null,
        j.state === 'suspended' && j.gpu_released ? h('span', { class: 'reason', 'data-released': j.gpu_released },
          `${j.suspended_reason === 'idle' ? 'reclaimed while idle: ' : ''}${bytes(j.gpu_released)} GPU memory given back`) : null)),
      h('td', { class: 'num', 'data-label': 'GPU' }, jobGpu(j)),
      h('td', { class: 'num', 'data-label': 'GPU memory' }, j.gpu_milli ? bytes(j.gpu_mem) : '—'),
      h('td', { 'data-label': 'Placed on' }, j.placement?.length ? j.placement.map((p) => p.node ?? `GPU ${p.gpu}`).join(', ') : '—'),
      h('td', { 'data-label': 'Submitted', title: j.submitted_at }, ago(j.submitted_at, now)),
      h('td', { class: 'num', 'data-label': 'Run time' }, duration(j, now)),
      h('td', { class: 'actions' }, ACTIVE.has(j.state) && j.origin !== 'slurm'
        ? confirmButton(`Cancel`, `Cancel job ${j.id}?`, `cancel-${j.id}`, async () => {
          try { await api.cancel(j.id); flash(ctx.msg, `Job ${j.id}: cancel requested.`); } catch (e) { flash(ctx.msg, `Job ${j.id}: ${e.message}`, true); }
          ctx.refresh();
        })
        : null))))),
  ));
  clear(ctx.more, list.length > rows.length
    ? h('button', { type: 'button', class: 'btn', onclick: () => { ctx.shown += STEP; ctx.sig = ''; update(ctx, store); } }, `Show ${Math.min(STEP, list.length - rows.length)} more`)
    : null);
}
