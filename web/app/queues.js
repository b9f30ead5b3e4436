// queues.js - the queue tree (docs/api.md, Queues): per queue its guarantee and limit for each
// resource (GPU, GPU memory, CPU, memory), weight, what its running jobs hold (usage), pending
// and running jobs, whether its guarantee is met; an admin creates queues (top level or under
// a parent), edits them (PATCH /v1/queues/NAME with only the members changed) and deletes them.
// Who may submit to each queue ("allow": users, Unix groups, roles; no list = everyone) is shown
// and, by an admin, edited as comma-separated names.
//
// Amounts are typed as people write them: GPUs and CPUs as numbers (1.5), sizes as "40G"; they
// are sent as typed (numbers as numbers) so that tesseld's error, which names the field
// ("guarantee.gpu"), appears beside it.  A field the API adds later is shown as a column.

import { api } from './api.js';
import { h, clear, bytes } from './util.js';
import { confirmButton, keepFocus, flash, field, clearErrors, showError } from './widgets.js';

const RES = [
  { k: 'gpu', label: 'GPU', unit: (v) => `${v} GPU`, hint: 'e.g. 1.5' },
  { k: 'gpu_mem', label: 'GPU memory', unit: bytes, hint: 'e.g. 40G' },
  { k: 'cpu', label: 'CPU', unit: (v) => `${v} CPU`, hint: 'e.g. 8' },
  { k: 'mem', label: 'Memory', unit: bytes, hint: 'e.g. 64G' },
];
// Shown in their own columns, or deliberately not (aliases, tree links, times).
const KNOWN = new Set(['name', 'parent', 'children', 'weight', 'guarantee', 'limit', 'usage', 'pending', 'running',
  'guarantee_satisfied', 'priority', 'guarantee_gpu_milli', 'max_gpu_milli', 'gpu_milli', 'created_at', 'allow',
  'reserve_after', 'placement', 'effective', 'idle_reclaim', 'idle_reclaim_own', 'idle_reclaim_from',
  'gpu_mem_oversubscribe', 'gpu_mem_oversubscribe_own', 'gpu_mem_oversubscribe_from']);

// A duration in seconds as `tessel queues` prints it: 0, 45s, 15m, 1h30m.
function duration(v) {
  if (!v) return '0';
  let s = Math.round(v), out = '';
  for (const [n, u] of [[86400, 'd'], [3600, 'h'], [60, 'm'], [1, 's']]) {
    if (s >= n) { out += `${Math.floor(s / n)}${u}`; s %= n; }
  }
  return out;
}

// The setting in effect, with "(inherited)" when the queue has none of its own.
function setting(own, eff, fmt) {
  if (eff === null || eff === undefined) return '—';
  return own === null || own === undefined ? `${fmt(eff)} (inherited)` : fmt(eff);
}
const ALLOW = [
  { k: 'users', label: 'Users', hint: 'e.g. alice, bob' },
  { k: 'groups', label: 'Unix groups', hint: 'e.g. ml-team' },
  { k: 'roles', label: 'Roles', hint: 'admin, user' },
];

// "everyone", or "users alice, bob · groups ml · roles admin".
function whoMay(allow) {
  const parts = ALLOW.filter((a) => allow?.[a.k]?.length).map((a) => `${a.k} ${allow[a.k].join(', ')}`);
  return parts.length ? parts.join(' · ') : 'everyone';
}

// "alice, bob" <-> ["alice", "bob"].
const listText = (arr) => (arr || []).join(', ');
const listValue = (s) => s.split(',').map((x) => x.trim()).filter((x) => x !== '');

export function mount(ctx, store) {
  ctx.title = 'Queues';
  ctx.msg = h('div', { role: 'status' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.editor = h('div', {});
  ctx.sig = '';
  ctx.root.append(h('h1', {}, 'Queues'),
    h('p', { class: 'sub' }, 'Each queue is owed its guarantee; capacity beyond the guarantees is shared by weight among sibling queues, up to each queue\'s limit. ',
      'Only training jobs run beyond their queue\'s guarantee, and only they are preempted (and requeued) to give a queue back what it is owed. Jobs go to leaf queues.'),
    ctx.msg, ctx.table, ctx.editor);
  if (store.admin) { ctx.create = createForm(ctx, store); ctx.root.append(ctx.create); }
  update(ctx, store);
}

// Queues in tree order (parents before their children, siblings in the API's order), with depth.
function tree(queues) {
  const by = new Map(queues.map((q) => [q.name, q]));
  const out = [], seen = new Set();
  const walk = (q, depth) => {
    if (seen.has(q.name)) return;
    seen.add(q.name);
    out.push({ q, depth });
    for (const c of queues) if (c.parent === q.name) walk(c, depth + 1);
  };
  for (const q of queues) if (!q.parent || !by.has(q.parent)) walk(q, 0);
  for (const q of queues) walk(q, 0);
  return out;
}

// {gpu: 1.5, gpu_mem: 4e10, cpu: null, mem: null} -> "1.5 GPU · 37.3 GiB GPU memory"; all null -> none.
function amounts(o, none, skipZero = false) {
  if (!o) return none;
  const parts = RES.filter((r) => o[r.k] !== null && o[r.k] !== undefined && !(skipZero && r.k !== 'gpu' && o[r.k] === 0))
    .map((r) => (r.k === 'gpu_mem' ? `${bytes(o[r.k])} GPU mem` : r.k === 'mem' ? `${bytes(o[r.k])} mem` : r.unit(o[r.k])));
  return parts.length ? parts.join(' · ') : none;
}

function extraKeys(queues) {
  const keys = [];
  for (const q of queues) for (const k of Object.keys(q)) if (!KNOWN.has(k) && !keys.includes(k)) keys.push(k);
  return keys;
}

export function update(ctx, store) {
  const sig = JSON.stringify([store.queues, store.admin]);
  if (sig === ctx.sig) return;
  ctx.sig = sig;
  const extra = extraKeys(store.queues);
  const cols = [['Queue'], ['Guarantee'], ['Limit'], ['Weight', 'num'], ['In use'], ['Pending', 'num'], ['Running', 'num'],
    ['Guarantee met'], ['Priority', 'num'], ['Who may submit'], ['Reservation after'], ['Fractions'], ['Idle reclaim'],
    ['Oversubscribe'], ...extra.map((k) => [k])];
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data queues' },
    h('caption', { class: 'sr-only' }, 'Queues, parents before their children'),
    h('thead', {}, h('tr', {}, cols.map(([c, cls]) => h('th', { scope: 'col', class: cls || null }, c)),
      store.admin ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')) : null)),
    h('tbody', {}, tree(store.queues).map(({ q, depth }) => {
      const use = q.usage?.gpu ?? (q.gpu_milli ?? 0) / 1000;
      const cap = q.limit?.gpu ?? (q.max_gpu_milli != null ? q.max_gpu_milli / 1000 : null);
      const owed = q.guarantee?.gpu ?? (q.guarantee_gpu_milli != null ? q.guarantee_gpu_milli / 1000 : null);
      const scale = cap ?? owed;
      const meterLabel = `${q.name}: ${use} GPU in use` + (owed != null ? `, guaranteed ${owed}` : '') + (cap != null ? `, limit ${cap}` : '');
      const met = q.guarantee_satisfied;
      return h('tr', { 'data-queue': q.name },
        h('td', { 'data-label': 'Queue', style: { paddingLeft: `${10 + depth * 18}px` } },
          depth ? h('span', { class: 'sub', 'aria-hidden': 'true' }, '└ ') : null,
          h('a', { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, q.name),
          q.parent ? h('span', { class: 'sr-only' }, ` (in ${q.parent})`) : null,
          q.children?.length ? h('span', { class: 'sub' }, ` · ${q.children.length} sub-queue${q.children.length === 1 ? '' : 's'}`) : null),
        h('td', { 'data-label': 'Guarantee', 'data-col': 'guarantee' }, q.guarantee ? amounts(q.guarantee, 'none') : owed != null ? `${owed} GPU` : 'none'),
        h('td', { 'data-label': 'Limit', 'data-col': 'limit' }, q.limit ? amounts(q.limit, 'no limit') : cap != null ? `${cap} GPU` : 'no limit'),
        h('td', { class: 'num', 'data-label': 'Weight', 'data-col': 'weight' }, q.weight ?? '—'),
        h('td', { 'data-label': 'In use', title: meterLabel }, q.usage ? amounts(q.usage, '0 GPU', true) : `${use} GPU`,
          scale ? h('meter', { min: 0, max: scale, value: Math.min(use, scale), 'aria-label': meterLabel }) : null),
        h('td', { class: 'num', 'data-label': 'Pending' }, String(q.pending ?? 0)),
        h('td', { class: 'num', 'data-label': 'Running' }, String(q.running ?? 0)),
        h('td', { 'data-label': 'Guarantee met' }, met === true ? 'yes' : met === false ? h('span', { class: 'badge st-pending' }, 'reclaiming') : '—'),
        h('td', { class: 'num', 'data-label': 'Priority' }, q.priority ?? '—'),
        h('td', { 'data-label': 'Who may submit', 'data-col': 'allow' }, whoMay(q.allow)),
        h('td', { 'data-label': 'Reservation after', 'data-col': 'reserve_after', title: 'how long a job that does not fit waits before capacity is reserved for it' },
          setting(q.reserve_after, q.effective?.reserve_after, duration)),
        h('td', { 'data-label': 'Fractions', 'data-col': 'placement', title: 'spread: fractional jobs on idle GPUs first; pack: they share GPUs' },
          setting(q.placement, q.effective?.placement, String)),
        h('td', { 'data-label': 'Idle reclaim', 'data-col': 'idle_reclaim', title: 'a running job that did no GPU work this long gives its GPU memory back, resumed at its next CUDA call' },
          (q.idle_reclaim ? duration(q.idle_reclaim) : 'never') +
            (q.idle_reclaim_from && q.idle_reclaim_from !== q.name ? ` (${q.idle_reclaim_from}'s)` : '')),
        h('td', { 'data-label': 'Oversubscribe', 'data-col': 'gpu_mem_oversubscribe', title: 'host memory per GPU that its jobs\' allocations past their GPU memory may spill into, by default and at most (admins may ask more); set with tessel queues set --gpu-mem-oversubscribe' },
          (q.gpu_mem_oversubscribe ? bytes(q.gpu_mem_oversubscribe) : 'none') +
            (q.gpu_mem_oversubscribe_from && q.gpu_mem_oversubscribe_from !== q.name ? ` (${q.gpu_mem_oversubscribe_from}'s)` : '')),
        extra.map((k) => h('td', { 'data-label': k }, typeof q[k] === 'object' ? JSON.stringify(q[k]) : String(q[k] ?? '—'))),
        store.admin ? h('td', { class: 'actions' },
          h('button', { type: 'button', class: 'btn small', 'data-key': `edit-${q.name}`, 'aria-label': `Edit queue ${q.name}`,
            onclick: () => openEditor(ctx, store, q.name) }, 'Edit'),
          q.name === 'default' || q.children?.length ? null : confirmButton('Delete', `Delete queue ${q.name}?`, `del-${q.name}`, async () => {
            try { await api.deleteQueue(q.name); flash(ctx.msg, `Queue ${q.name} deleted.`); } catch (e) { flash(ctx.msg, e.message, true); }
            ctx.refresh();
          })) : null);
    })))));
  if (ctx.create) syncParents(ctx.create, store);
}

// Typed text -> request value: '' -> null; a number -> the number; else the text (sizes "40G",
// or something tesseld will refuse by name).
function value(s) {
  if (s === '') return null;
  return isNaN(Number(s)) ? s : Number(s);
}

function shown(r, v) {
  if (v === null || v === undefined) return '';
  if (r === 'gpu_mem' || r === 'mem') return v % 2 ** 30 === 0 ? `${v / 2 ** 30}G` : v % 2 ** 20 === 0 ? `${v / 2 ** 20}M` : String(v);
  return String(v);
}

// The guarantee and limit inputs, one per resource: fields named "guarantee.gpu" etc., as the
// API names them in its errors.
function resourceFields(prefix, inputs, q) {
  return ['guarantee', 'limit'].map((kind) => h('fieldset', { class: 'row' },
    h('legend', {}, kind === 'guarantee' ? 'Guarantee (owed; empty: not governed)' : 'Limit (cap; empty: none)'),
    RES.map((r) => {
      const name = `${kind}.${r.k}`;
      inputs[name] = h('input', { type: 'text', inputmode: r.k.endsWith('mem') ? 'text' : 'decimal', placeholder: r.hint, value: shown(r.k, q?.[kind]?.[r.k]) });
      inputs[name].id = `${prefix}-${kind}-${r.k}`;
      return field(name, r.label, inputs[name], null, prefix);
    })));
}

// The three lists of who may submit: fields named "allow.users" etc., as the API names them.
function allowFields(prefix, inputs, q) {
  return h('fieldset', { class: 'row' },
    h('legend', {}, 'Who may submit (comma-separated; all empty: everyone)'),
    ALLOW.map((a) => {
      const name = `allow.${a.k}`;
      inputs[name] = h('input', { type: 'text', autocomplete: 'off', placeholder: a.hint, value: listText(q?.allow?.[a.k]) });
      inputs[name].id = `${prefix}-allow-${a.k}`;
      return field(name, a.label, inputs[name], null, prefix);
    }));
}

function openEditor(ctx, store, name) {
  const q = store.queues.find((x) => x.name === name);
  if (!q) return;
  const inputs = {};
  inputs.weight = h('input', { type: 'text', inputmode: 'numeric', value: q.weight ?? '' });
  inputs.priority = h('input', { type: 'text', inputmode: 'numeric', value: q.priority ?? '' });
  // its own setting: empty when it takes its parent's, off for never
  const own = q.idle_reclaim_own;
  const idleShown = own === null || own === undefined ? '' : own ? duration(own) : 'off';
  inputs.idle_reclaim = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. 30m', value: idleShown });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'edit-title', id: 'queue-editor' },
    h('h2', { id: 'edit-title' }, `Edit queue ${name}`, q.parent ? h('span', { class: 'sub' }, ` (in ${q.parent})`) : null),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    resourceFields('eq', inputs, q),
    allowFields('eq', inputs, q),
    h('div', { class: 'row' },
      field('weight', 'Weight', inputs.weight, '1 … 1000: share of idle capacity among sibling queues.', 'eq'),
      field('priority', 'Priority', inputs.priority, 'Orders the list only.', 'eq'),
      field('idle_reclaim', 'Idle reclaim', inputs.idle_reclaim, 'A job without GPU work this long (30m, 1h) gives its GPU memory back; off: never; empty: its parent\'s (at the top level: never).', 'eq')),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', class: 'btn primary' }, 'Save'),
      h('button', { type: 'button', class: 'btn', onclick: () => { clear(ctx.editor); document.querySelector(`[data-key="edit-${CSS.escape(name)}"]`)?.focus(); } }, 'Close')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    // Only the members changed (PATCH merges guarantee and limit member by member).
    const patch = {};
    for (const kind of ['guarantee', 'limit']) {
      for (const r of RES) {
        const typed = inputs[`${kind}.${r.k}`].value.trim();
        if (typed === shown(r.k, q[kind]?.[r.k])) continue;
        (patch[kind] ||= {})[r.k] = value(typed);
      }
    }
    for (const k of ['weight', 'priority']) {
      const typed = inputs[k].value.trim();
      if (typed !== String(q[k] ?? '')) patch[k] = value(typed);
    }
    for (const a of ALLOW) {
      const typed = listValue(inputs[`allow.${a.k}`].value);
      if (typed.join(',') !== (q.allow?.[a.k] || []).join(',')) (patch.allow ||= {})[a.k] = typed;
    }
    const idle = inputs.idle_reclaim.value.trim();
    if (idle !== idleShown) patch.idle_reclaim = idle === '' ? null : value(idle);
    if (!Object.keys(patch).length) { showError(form, { message: 'Nothing was changed.' }); return; }
    try {
      await api.updateQueue(name, patch);
      clear(ctx.editor);
      flash(ctx.msg, `Queue ${name} saved.`);
      await ctx.refresh();
      document.querySelector(`[data-key="edit-${CSS.escape(name)}"]`)?.focus();
    } catch (e) {
      showError(form, e);
    }
  });
  clear(ctx.editor, form);
  form.querySelector('input')?.focus();
}

function syncParents(form, store) {
  const sel = form.querySelector('#nq-parent');
  const want = ['', ...store.queues.filter((q) => q.name !== 'default').map((q) => q.name)];
  if ([...sel.options].map((o) => o.value).join('\n') === want.join('\n')) return;
  const v = sel.value;
  clear(sel, want.map((n) => h('option', { value: n, selected: n === v }, n || '(top level)')));
}

function createForm(ctx, store) {
  const inputs = {};
  const name = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. vision' });
  const parent = h('select', {}, h('option', { value: '' }, '(top level)'));
  inputs.weight = h('input', { type: 'text', inputmode: 'numeric', placeholder: '1' });
  inputs.priority = h('input', { type: 'text', inputmode: 'numeric', placeholder: '0' });
  inputs.idle_reclaim = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. 30m' });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'newq-title' },
    h('h2', { id: 'newq-title' }, 'New queue'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' },
      field('name', 'Name', name, 'Lower-case letters, digits, - and _.', 'nq'),
      field('parent', 'Parent', parent, 'Fixed once created.', 'nq'),
      field('weight', 'Weight', inputs.weight, null, 'nq'),
      field('priority', 'Priority', inputs.priority, null, 'nq'),
      field('idle_reclaim', 'Idle reclaim', inputs.idle_reclaim, 'Off: never; empty: its parent\'s (at the top level: never).', 'nq')),
    resourceFields('nq', inputs, null),
    allowFields('nq', inputs, null),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create queue')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { name: name.value.trim() };
    if (parent.value) body.parent = parent.value;
    for (const kind of ['guarantee', 'limit']) {
      for (const r of RES) {
        const v = value(inputs[`${kind}.${r.k}`].value.trim());
        if (v !== null) (body[kind] ||= {})[r.k] = v;
      }
    }
    for (const k of ['weight', 'priority', 'idle_reclaim']) {
      const v = value(inputs[k].value.trim());
      if (v !== null) body[k] = v;
    }
    for (const a of ALLOW) {
      const v = listValue(inputs[`allow.${a.k}`].value);
      if (v.length) (body.allow ||= {})[a.k] = v;
    }
    try {
      await api.createQueue(body);
      flash(ctx.msg, `Queue ${body.name} created.`);
      name.value = '';
      for (const i of Object.values(inputs)) i.value = '';
      await ctx.refresh();
    } catch (e) {
      showError(form, e);
    }
  });
  syncParents(form, store);
  return form;
}
