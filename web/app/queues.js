// queues.js - queues with their priority, limits (and guarantee/weight when tesseld's queue
// objects carry them), pending and running counts, and the GPU share their running jobs hold;
// an admin creates, edits (PATCH /v1/queues/NAME) and deletes them.
//
// GPU shares are edited in GPUs (0.5, 2) and sent in the API's milli-GPUs.  Fields the API
// adds later are shown as they come (columns named after the field) and, when numeric and
// named like a known queue setting, editable.

import { api } from './api.js';
import { h, clear, gpuOf, time } from './util.js';
import { confirmButton, keepFocus, flash, field, clearErrors, showError } from './widgets.js';

const KNOWN = new Set(['name', 'priority', 'max_gpu_milli', 'gpu_milli', 'pending', 'running', 'created_at']);
// Settings an admin may edit, in the order shown; *_milli ones are edited in GPUs.
const EDITABLE = ['priority', 'guarantee_milli', 'max_gpu_milli', 'limit_milli', 'weight', 'guarantee', 'limit'];
const LABELS = {
  priority: 'Priority', max_gpu_milli: 'GPU limit', guarantee_milli: 'GPU guarantee', limit_milli: 'GPU limit',
  weight: 'Weight', guarantee: 'Guarantee', limit: 'Limit',
};

export function mount(ctx, store) {
  ctx.title = 'Queues';
  ctx.msg = h('div', { role: 'status' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.editor = h('div', {});
  ctx.sig = '';
  ctx.root.append(h('h1', {}, 'Queues'),
    h('p', { class: 'sub' }, 'Pending jobs are taken by queue priority (higher first), then job priority, then submission order; a queue at its GPU limit starts nothing more.'),
    ctx.msg, ctx.table, ctx.editor);
  if (store.admin) ctx.root.append(createForm(ctx));
  update(ctx, store);
}

function usage(store) {
  // milli-GPUs held by each queue's running jobs.
  const m = new Map();
  for (const j of store.jobs.values()) {
    if (j.state !== 'running') continue;
    const held = (j.placement || []).reduce((n, p) => n + p.milli, 0);
    m.set(j.queue, (m.get(j.queue) || 0) + held);
  }
  return m;
}

function extraKeys(queues) {
  const keys = [];
  for (const q of queues) for (const k of Object.keys(q)) if (!KNOWN.has(k) && !keys.includes(k)) keys.push(k);
  return keys;
}

function fmt(k, v) {
  if (v === null || v === undefined) return k.endsWith('_milli') ? 'none' : '—';
  if (k.endsWith('_milli')) return `${gpuOf(v)} GPU`;
  if (k.endsWith('_at')) return time(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

export function update(ctx, store) {
  const use = usage(store);
  const extra = extraKeys(store.queues);
  const sig = JSON.stringify([store.queues, [...use], store.admin]);
  if (sig === ctx.sig) return;
  ctx.sig = sig;
  const cols = ['Queue', 'Priority', ...extra.map((k) => LABELS[k] || k), 'GPU limit', 'In use', 'Pending', 'Running'];
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data queues' },
    h('caption', { class: 'sr-only' }, 'Queues'),
    h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i ? 'num' : null }, c)),
      store.admin ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')) : null)),
    h('tbody', {}, store.queues.map((q) => {
      // tesseld's own figure when it gives one (gpu_milli), else summed from the running jobs.
      const held = q.gpu_milli ?? use.get(q.name) ?? 0;
      const limit = q.max_gpu_milli;
      return h('tr', { 'data-queue': q.name },
        h('td', { 'data-label': 'Queue' }, h('a', { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, q.name)),
        h('td', { class: 'num', 'data-label': 'Priority' }, String(q.priority)),
        extra.map((k) => h('td', { class: 'num', 'data-label': LABELS[k] || k }, fmt(k, q[k]))),
        h('td', { class: 'num', 'data-label': 'GPU limit', 'data-col': 'limit' }, limit === null || limit === undefined ? 'no limit' : `${gpuOf(limit)} GPU`),
        h('td', { class: 'num', 'data-label': 'In use' }, `${gpuOf(held)} GPU`,
          limit ? h('meter', { min: 0, max: limit, value: Math.min(held, limit), 'aria-label': `${q.name}: ${gpuOf(held)} of ${gpuOf(limit)} GPU in use` }) : null),
        h('td', { class: 'num', 'data-label': 'Pending' }, String(q.pending ?? 0)),
        h('td', { class: 'num', 'data-label': 'Running' }, String(q.running ?? 0)),
        store.admin ? h('td', { class: 'actions' },
          h('button', { type: 'button', class: 'btn small', 'data-key': `edit-${q.name}`, 'aria-label': `Edit queue ${q.name}`,
            onclick: () => openEditor(ctx, store, q.name) }, 'Edit'),
          q.name === 'default' ? null : confirmButton('Delete', `Delete queue ${q.name}?`, `del-${q.name}`, async () => {
            try { await api.deleteQueue(q.name); flash(ctx.msg, `Queue ${q.name} deleted.`); } catch (e) { flash(ctx.msg, e.message, true); }
            ctx.refresh();
          })) : null);
    })))));
}

// GPUs typed by a person -> milli for the API; '' -> null (no limit).  Anything not a number is
// sent as typed so that tesseld's error names the field.
function toMilli(s) {
  if (s === '') return null;
  const n = Number(s);
  return isNaN(n) ? s : Math.round(n * 1000);
}

function openEditor(ctx, store, name) {
  const q = store.queues.find((x) => x.name === name);
  if (!q) return;
  const keys = EDITABLE.filter((k) => k in q);
  const inputs = {};
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'edit-title', id: 'queue-editor' },
    h('h2', { id: 'edit-title' }, `Edit queue ${name}`),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' }, keys.map((k) => {
      const milli = k.endsWith('_milli');
      const v = q[k];
      inputs[k] = h('input', { type: 'text', inputmode: 'decimal', value: v === null || v === undefined ? '' : milli ? gpuOf(v) : String(v) });
      return field(k, milli ? `${LABELS[k] || k} (GPUs)` : LABELS[k] || k, inputs[k],
        milli ? 'In GPUs, e.g. 1.5; empty for none.' : k === 'priority' ? 'Higher runs first.' : null, 'eq');
    })),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', class: 'btn primary' }, 'Save'),
      h('button', { type: 'button', class: 'btn', onclick: () => { clear(ctx.editor); document.querySelector(`[data-key="edit-${CSS.escape(name)}"]`)?.focus(); } }, 'Close')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    // Only what was changed, so that a setting tesseld shows but does not take is not sent.
    const patch = {};
    for (const k of keys) {
      const s = inputs[k].value.trim();
      const v = k.endsWith('_milli') ? toMilli(s) : s === '' ? null : isNaN(Number(s)) ? s : Number(s);
      if (v !== (q[k] ?? null)) patch[k] = v;
    }
    if (!Object.keys(patch).length) { showError(form, { message: 'Nothing was changed.' }); return; }
    try {
      await api.updateQueue(name, patch);
      clear(ctx.editor);
      flash(ctx.msg, `Queue ${name} saved.`);
      await ctx.refresh();
    } catch (e) {
      showError(form, e);
    }
  });
  clear(ctx.editor, form);
  form.querySelector('input')?.focus();
}

function createForm(ctx) {
  const name = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. big' });
  const prio = h('input', { type: 'text', inputmode: 'numeric', value: '0' });
  const limit = h('input', { type: 'text', inputmode: 'decimal', placeholder: 'no limit' });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'newq-title' },
    h('h2', { id: 'newq-title' }, 'New queue'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' },
      field('name', 'Name', name, 'Lower-case letters, digits, - and _.', 'nq'),
      field('priority', 'Priority', prio, null, 'nq'),
      field('max_gpu_milli', 'GPU limit (GPUs)', limit, 'Empty for no limit.', 'nq')),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create queue')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { name: name.value.trim() };
    const p = prio.value.trim();
    if (p !== '') body.priority = isNaN(Number(p)) ? p : Number(p);
    const l = toMilli(limit.value.trim());
    if (l !== null) body.max_gpu_milli = l;
    try {
      await api.createQueue(body);
      flash(ctx.msg, `Queue ${body.name} created.`);
      name.value = ''; limit.value = ''; prio.value = '0';
      await ctx.refresh();
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}
