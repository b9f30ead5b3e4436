// projects.js - projects (docs/projects.md): the list of the caller's projects (an admin: all,
// with a form to create one), and a project's page: its members (owners and admins add,
// remove and change roles), the quota and use of its queue (from the live store's queues),
// its folders' use and quota together, and its jobs (GET /v1/jobs?project=NAME: everyone's
// when the project shares them).
//
// What a button may do is tesseld's to decide: the page offers the member controls to those
// the project says are its owners (or admins), and shows tesseld's answer (403, 409) beside
// the form when it refuses.

import { api } from './api.js';
import { h, clear, bytes, ago, command, jobGpu, stateBadge, time } from './util.js';
import { confirmButton, keepFocus, flash, field, clearErrors, showError } from './widgets.js';

const ROLES = ['owner', 'member', 'viewer'];
const RES = [
  { k: 'gpu', label: 'GPU', fmt: (v) => `${v}` },
  { k: 'gpu_mem', label: 'GPU memory', fmt: bytes },
  { k: 'cpu', label: 'CPU', fmt: (v) => `${v}` },
  { k: 'mem', label: 'Memory', fmt: bytes },
];
const JOBS_SHOWN = 100;

export function mount(ctx, store) {
  if (ctx.route.name === 'project') return mountOne(ctx, store);
  ctx.title = 'Projects';
  ctx.msg = h('div', { role: 'status' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.root.append(h('h1', {}, 'Projects'),
    h('p', { class: 'sub' }, 'A project groups people and sends its jobs to its queue, whose guarantee and limit are its quota.'),
    ctx.msg, ctx.table);
  if (store.admin) ctx.root.append(h('h2', {}, 'New project'), createForm(ctx, store));
  loadList(ctx);
}

export function update(ctx, store) {
  if (ctx.route.name === 'project') updateOne(ctx, store);
}

// ---- the list --------------------------------------------------------------------------------

async function loadList(ctx) {
  try {
    const { projects } = await api.projects();
    renderList(ctx, projects);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

function renderList(ctx, projects) {
  if (!projects.length) { clear(ctx.table, h('p', { class: 'empty' }, 'You are in no project.')); return; }
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, 'Projects'),
    h('thead', {}, h('tr', {}, ['Project', 'Queue', 'Your role', 'Members', 'Active jobs', 'Jobs', 'Description']
      .map((c, i) => h('th', { scope: 'col', class: i === 3 || i === 4 ? 'num' : null }, c)))),
    h('tbody', {}, projects.map((p) => h('tr', { 'data-project': p.name },
      h('td', { 'data-label': 'Project' }, h('a', { href: `#/projects/${encodeURIComponent(p.name)}` }, p.name)),
      h('td', { 'data-label': 'Queue' }, p.queue),
      h('td', { 'data-label': 'Your role' }, p.role || '—'),
      h('td', { class: 'num', 'data-label': 'Members' }, String(p.members_count)),
      h('td', { class: 'num', 'data-label': 'Active jobs' }, String(p.jobs_active)),
      h('td', { 'data-label': 'Jobs' }, p.share_jobs ? 'shared' : 'private'),
      h('td', { 'data-label': 'Description' }, p.description || '')))))));
}

function createForm(ctx, store) {
  const leaves = store.queues.filter((q) => !q.children?.length).map((q) => q.name).sort();
  const name = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const queue = h('select', {}, leaves.map((q) => h('option', { value: q, selected: q === 'default' }, q)));
  const owner = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const desc = h('input', { type: 'text', maxlength: 256 });
  const form = h('form', { class: 'card form', novalidate: true },
    field('name', 'Name', name, 'a-z, 0-9, _ and -, starting with a letter', 'np'),
    field('queue', 'Queue (its quota)', queue, 'a leaf queue; create one with its guarantee on the Queues page', 'np'),
    field('owner', 'Owner', owner, 'a user who will manage its members (optional)', 'np'),
    field('description', 'Description', desc, null, 'np'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('button', { type: 'submit', class: 'btn primary' }, 'Create project'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { name: name.value.trim(), queue: queue.value };
    if (owner.value.trim()) body.owner = owner.value.trim();
    if (desc.value) body.description = desc.value;
    try {
      const p = await api.createProject(body);
      flash(ctx.msg, `Project ${p.name} created.`);
      form.reset();
      loadList(ctx);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}

// ---- one project -----------------------------------------------------------------------------

function mountOne(ctx, store) {
  ctx.name = ctx.route.project;
  ctx.title = `Project ${ctx.name}`;
  ctx.head = h('div', {});
  ctx.msg = h('div', { role: 'status' });
  ctx.quota = h('div', { class: 'tablewrap' });
  ctx.members = h('div', { class: 'tablewrap' });
  ctx.memberForm = h('div', {});
  ctx.jobs = h('div', { class: 'tablewrap' });
  ctx.jobCount = h('p', { class: 'sub', role: 'status', 'aria-live': 'polite' });
  ctx.root.append(h('h1', {}, `Project ${ctx.name}`), ctx.head, ctx.msg,
    h('h2', {}, 'Quota and use'), ctx.quota,
    h('h2', {}, 'Members'), ctx.members, ctx.memberForm,
    h('h2', {}, 'Jobs'), ctx.jobCount, ctx.jobs);
  loadOne(ctx, store);
}

async function loadOne(ctx, store) {
  try {
    ctx.project = await api.project(ctx.name);
  } catch (e) {
    clear(ctx.head, h('p', { class: 'error', role: 'alert' }, e.status === 404 ? `No project ${ctx.name} (or you are not in it).` : e.message));
    return;
  }
  const p = ctx.project;
  ctx.manage = store.admin || p.role === 'owner';
  const pairs = [
    ['Description', p.description || '—'],
    ['Your role', h('span', { 'data-role': p.role || '' }, p.role || (store.admin ? 'admin' : '—'))],
    ['Queue', h('a', { href: '#/queues' }, p.queue)],
    ['Jobs', p.share_jobs ? 'shared: members and viewers see each other\'s jobs' : 'private: each member sees their own'],
    ['Folders', h('span', { 'data-folders': '' }, folderUse(p))],
    ['Created', p.created_at ? `${time(p.created_at)} by ${p.created_by}` : `by ${p.created_by}`],
  ];
  clear(ctx.head, h('dl', { class: 'props' }, pairs.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v)))));
  renderMembers(ctx, store);
  renderQuota(ctx, store);
  loadJobs(ctx);
}

// The space the project's folders use together and its folder quota (docs/folders.md, "Quotas"),
// measured by tesseld, which refuses uploads and read-write jobs past it.
function folderUse(p) {
  const used = p.folder_used === null || p.folder_used === undefined ? 'not measured yet' : `${bytes(p.folder_used)} used`;
  const limit = p.folder_quota === null || p.folder_quota === undefined ? 'no limit' : `limit ${bytes(p.folder_quota)}`;
  return `${used}, ${limit} (measured: uploads and read-write jobs refused past it)`;
}

function updateOne(ctx, store) {
  if (!ctx.project) return;
  renderQuota(ctx, store);
  loadJobs(ctx);
}

function renderQuota(ctx, store) {
  const q = store.queues.find((x) => x.name === ctx.project.queue);
  if (!q) { clear(ctx.quota, h('p', { class: 'empty' }, `Queue ${ctx.project.queue} not found.`)); return; }
  const show = (v, fmt) => (v === null || v === undefined ? '—' : fmt(v));
  const sig = JSON.stringify([q.usage, q.guarantee, q.limit, q.pending, q.running]);
  if (sig === ctx.quotaSig) return;
  ctx.quotaSig = sig;
  clear(ctx.quota, h('table', { class: 'data', 'data-queue': q.name },
    h('caption', { class: 'sr-only' }, `Quota and use of queue ${q.name}`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Resource'),
      ['In use', 'Guarantee', 'Limit'].map((c) => h('th', { scope: 'col', class: 'num' }, c)))),
    h('tbody', {}, RES.map((r) => h('tr', { 'data-res': r.k },
      h('th', { scope: 'row' }, r.label),
      h('td', { class: 'num', 'data-label': 'In use' }, show(q.usage?.[r.k], r.fmt)),
      h('td', { class: 'num', 'data-label': 'Guarantee' }, show(q.guarantee?.[r.k], r.fmt)),
      h('td', { class: 'num', 'data-label': 'Limit' }, show(q.limit?.[r.k], r.fmt)))),
    h('tr', {}, h('th', { scope: 'row' }, 'Jobs'), h('td', { class: 'num', colspan: 3 }, `${q.running} running, ${q.pending} pending`)))));
}

function renderMembers(ctx, store) {
  const p = ctx.project;
  if (!p.members?.length && p.members_count > 0) {
    // The project 'default': every user, listed to admins only.
    clear(ctx.members, h('p', { class: 'empty' }, `${p.members_count} members (every user; listed to admins only).`));
    clear(ctx.memberForm);
    return;
  }
  keepFocus(ctx.members, () => clear(ctx.members, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, `Members of ${p.name}`),
    h('thead', {}, h('tr', {}, ['User', 'Role', 'Added'].map((c) => h('th', { scope: 'col' }, c)),
      ctx.manage ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')) : null)),
    h('tbody', {}, (p.members || []).map((m) => h('tr', { 'data-member': m.user, 'data-role': m.role },
      h('td', { 'data-label': 'User' }, m.user),
      h('td', { 'data-label': 'Role' }, ctx.manage ? roleSelect(ctx, store, m) : m.role),
      h('td', { 'data-label': 'Added' }, time(m.added_at)),
      ctx.manage ? h('td', { class: 'actions' }, confirmButton('Remove', `Remove ${m.user} from ${p.name}?`, `rm-${m.user}`, async () => {
        try { await api.removeMember(p.name, m.user); flash(ctx.msg, `${m.user} removed from ${p.name}.`); } catch (e) { flash(ctx.msg, e.message, true); }
        loadOne(ctx, store);
      })) : null))))));
  clear(ctx.memberForm, ctx.manage ? memberForm(ctx, store) : null);
}

function roleSelect(ctx, store, m) {
  const s = h('select', { 'aria-label': `Role of ${m.user}`, 'data-key': `role-${m.user}` },
    ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)));
  s.addEventListener('change', async () => {
    try {
      ctx.project = await api.setMemberRole(ctx.project.name, m.user, s.value);
      flash(ctx.msg, `${m.user} is now ${s.value === 'owner' ? 'an' : 'a'} ${s.value}.`);
    } catch (e) {
      flash(ctx.msg, e.message, true);
    }
    loadOne(ctx, store);
  });
  return s;
}

function memberForm(ctx, store) {
  const user = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const role = h('select', {}, ROLES.map((r) => h('option', { value: r, selected: r === 'member' }, r)));
  const form = h('form', { class: 'card form', novalidate: true, 'aria-label': 'Add a member' },
    h('h3', {}, 'Add a member'),
    field('user', 'User', user, 'a user of tesseld', 'am'),
    field('role', 'Role', role, null, 'am'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('button', { type: 'submit', class: 'btn primary' }, 'Add member'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      ctx.project = await api.addMember(ctx.project.name, { user: user.value.trim(), role: role.value });
      flash(ctx.msg, `${user.value.trim()} added as ${role.value}.`);
      loadOne(ctx, store);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}

async function loadJobs(ctx) {
  if (ctx.jobsLoading) return;
  ctx.jobsLoading = true;
  let jobs;
  try {
    ({ jobs } = await api.jobs({ project: ctx.name, order: 'desc', limit: JOBS_SHOWN }));
  } catch (e) {
    clear(ctx.jobs, h('p', { class: 'error' }, e.message));
    return;
  } finally {
    ctx.jobsLoading = false;
  }
  const now = Date.now();
  ctx.jobCount.textContent = `${jobs.length}${jobs.length === JOBS_SHOWN ? '+' : ''} job${jobs.length === 1 ? '' : 's'}${ctx.project.share_jobs ? '' : ' (yours: this project keeps each member\'s jobs private)'}`;
  const sig = jobs.map((j) => `${j.id}:${j.state}:${j.reason}`).join('|') + `#${Math.floor(now / 10000)}`;
  if (sig === ctx.jobSig) return;
  ctx.jobSig = sig;
  if (!jobs.length) { clear(ctx.jobs, h('p', { class: 'empty' }, 'No job in this project yet.')); return; }
  keepFocus(ctx.jobs, () => clear(ctx.jobs, h('table', { class: 'data jobs' },
    h('caption', { class: 'sr-only' }, `Jobs of ${ctx.name}, newest first`),
    h('thead', {}, h('tr', {}, ['ID', 'Name / command', 'User', 'State', 'GPU', 'Submitted']
      .map((t, i) => h('th', { scope: 'col', class: i === 0 || i === 4 ? 'num' : null }, t)))),
    h('tbody', {}, jobs.map((j) => h('tr', { 'data-job': j.id, 'data-state': j.state },
      h('td', { class: 'num', 'data-label': 'ID' }, h('a', { href: `#/jobs/${j.id}`, 'aria-label': `Job ${j.id}` }, `#${j.id}`)),
      h('td', { class: 'cmd', 'data-label': 'Command' }, j.name ? h('strong', {}, j.name, ' ') : null, h('code', {}, command(j))),
      h('td', { 'data-label': 'User' }, j.user),
      h('td', { 'data-label': 'State' }, h('span', {}, stateBadge(j.state, j.reason),
        j.state === 'pending' && j.reason ? h('span', { class: 'reason', 'data-code': j.reason_code || null }, j.reason) : null)),
      h('td', { class: 'num', 'data-label': 'GPU' }, jobGpu(j)),
      h('td', { 'data-label': 'Submitted', title: j.submitted_at }, ago(j.submitted_at, now))))))));
}
