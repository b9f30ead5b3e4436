// queues.js - queues with their guarantee, limit (cap) and weight, the GPU share their running
// jobs hold, pending and running counts; an admin creates, edits (PATCH /v1/queues/NAME: only
// the fields changed) and deletes them.
//
// GPU shares are typed in GPUs (0.5, 2) and sent in the API's milli-GPUs.  A field the API
// adds later is shown as a column named after it, so the page never hides what tesseld says.

import { api } from './api.js';
import { h, clear, gpuOf, time } from './util.js';
import { confirmButton, keepFocus, flash, field, clearErrors, showError } from './widgets.js';

// Shown in their own columns (or not at all: name, created_at).
const KNOWN = new Set(['name', 'weight', 'guarantee_gpu_milli', 'max_gpu_milli', 'gpu_milli', 'pending',
  'running', 'priority', 'created_at']);
// What an admin sets, in the order of the forms; *_milli are typed in GPUs.
const SETTINGS = [
  { k: 'guarantee_gpu_milli', label: 'Guarantee (GPUs)', help: 'Owed to the queue: it gets it back by preempting training jobs of queues above theirs. Empty: none.' },
  { k: 'max_gpu_milli', label: 'Limit (GPUs)', help: 'Cap on what its running jobs hold together. Empty: no limit.' },
  { k: 'weight', label: 'Weight', help: '1 … 1000: its share of idle capacity beyond guarantees.' },
  { k: 'priority', label: 'Priority', help: 'Orders the list only.' },
];

export function mount(ctx, store) {
  ctx.title = 'Queues';
  ctx.msg = h('div', { role: 'status' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.editor = h('div', {});
  ctx.sig = '';
  ctx.root.append(h('h1', {}, 'Queues'),
    h('p', { class: 'sub' }, 'Each queue is owed its guarantee; capacity beyond the guarantees is shared by weight (fair share), up to each queue\'s limit. ',
      'Only training jobs run beyond their queue\'s guarantee, and only they are preempted to give a queue back what it is owed.'),
    ctx.msg, ctx.table, ctx.editor);
  if (store.admin) ctx.root.append(createForm(ctx));
  update(ctx, store);
}

function usage(store) {
  // milli-GPUs held by each queue's running jobs (when tesseld does not say: gpu_milli).
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
  if (v === null || v === undefined) return '—';
  if (k.endsWith('_milli')) return `${gpuOf(v)} GPU`;
  if (k.endsWith('_at')) return time(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function gpus(v, none) {
  return v === null || v === undefined ? none : `${gpuOf(v)} GPU`;
}

export function update(ctx, store) {
  const use = usage(store);
  const extra = extraKeys(store.queues);
  const sig = JSON.stringify([store.queues, [...use], store.admin]);
  if (sig === ctx.sig) return;
  ctx.sig = sig;
  const has = (k) => store.queues.some((q) => k in q);
  const cols = [
    ['Queue', null], has('guarantee_gpu_milli') ? ['Guarantee', 'num'] : null, ['Limit', 'num'],
    has('weight') ? ['Weight', 'num'] : null, ['In use', 'num'], ['Pending', 'num'], ['Running', 'num'],
    ['Priority', 'num'], ...extra.map((k) => [k, 'num']),
  ].filter(Boolean);
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data queues' },
    h('caption', { class: 'sr-only' }, 'Queues'),
    h('thead', {}, h('tr', {}, cols.map(([c, cls]) => h('th', { scope: 'col', class: cls }, c)),
      store.admin ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')) : null)),
    h('tbody', {}, store.queues.map((q) => {
      const held = q.gpu_milli ?? use.get(q.name) ?? 0;
      const cap = q.max_gpu_milli ?? null, owed = q.guarantee_gpu_milli ?? null;
      const scale = cap ?? owed;
      const meterLabel = `${q.name}: ${gpuOf(held)} GPU in use` + (owed !== null ? `, guarantee ${gpuOf(owed)}` : '') + (cap !== null ? `, limit ${gpuOf(cap)}` : '');
      return h('tr', { 'data-queue': q.name },
        h('td', { 'data-label': 'Queue' }, h('a', { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, q.name)),
        has('guarantee_gpu_milli') ? h('td', { class: 'num', 'data-label': 'Guarantee', 'data-col': 'guarantee' }, gpus(owed, 'none')) : null,
        h('td', { class: 'num', 'data-label': 'Limit', 'data-col': 'limit' }, gpus(cap, 'no limit')),
        has('weight') ? h('td', { class: 'num', 'data-label': 'Weight', 'data-col': 'weight' }, fmt('weight', q.weight)) : null,
        h('td', { class: 'num', 'data-label': 'In use', title: meterLabel }, `${gpuOf(held)} GPU`,
          scale ? h('meter', { min: 0, max: scale, value: Math.min(held, scale), low: owed ?? undefined, 'aria-label': meterLabel }) : null),
        h('td', { class: 'num', 'data-label': 'Pending' }, String(q.pending ?? 0)),
        h('td', { class: 'num', 'data-label': 'Running' }, String(q.running ?? 0)),
        h('td', { class: 'num', 'data-label': 'Priority' }, fmt('priority', q.priority)),
        extra.map((k) => h('td', { class: 'num', 'data-label': k }, fmt(k, q[k]))),
        store.admin ? h('td', { class: 'actions' },
          h('button', { type: 'button', class: 'btn small', 'data-key': `edit-${q.name}`, 'aria-label': `Edit queue ${q.name}`,
            onclick: () => openEditor(ctx, store, q.name) }, 'Edit'),
          q.name === 'default' ? null : confirmButton('Delete', `Delete queue ${q.name}?`, `del-${q.name}`, async () => {
            try { await api.deleteQueue(q.name); flash(ctx.msg, `Queue ${q.name} deleted.`); } catch (e) { flash(ctx.msg, e.message, true); }
            ctx.refresh();
          })) : null);
    })))));
}

// What a person typed -> the API's value: GPUs -> milli ('' -> null: none); numbers as numbers.
// Anything else is sent as typed so that tesseld's error names the field.
function value(k, s) {
  if (k.endsWith('_milli')) {
    if (s === '') return null;
    const n = Number(s);
    return isNaN(n) ? s : Math.round(n * 1000);
  }
  if (s === '') return null;
  return isNaN(Number(s)) ? s : Number(s);
}

function shown(k, v) {
  if (v === null || v === undefined) return '';
  return k.endsWith('_milli') ? gpuOf(v) : String(v);
}

function openEditor(ctx, store, name) {
  const q = store.queues.find((x) => x.name === name);
  if (!q) return;
  const settings = SETTINGS.filter((s) => s.k in q);
  const inputs = {};
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'edit-title', id: 'queue-editor' },
    h('h2', { id: 'edit-title' }, `Edit queue ${name}`),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' }, settings.map(({ k, label, help }) => {
      inputs[k] = h('input', { type: 'text', inputmode: 'decimal', value: shown(k, q[k]) });
      return field(k, label, inputs[k], help, 'eq');
    })),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', class: 'btn primary' }, 'Save'),
      h('button', { type: 'button', class: 'btn', onclick: () => { clear(ctx.editor); document.querySelector(`[data-key="edit-${CSS.escape(name)}"]`)?.focus(); } }, 'Close')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    // Only what was changed.
    const patch = {};
    for (const { k } of settings) {
      const v = value(k, inputs[k].value.trim());
      if (v !== (q[k] ?? null)) patch[k] = v;
    }
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

function createForm(ctx) {
  const inputs = {};
  const name = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. prod' });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'newq-title' },
    h('h2', { id: 'newq-title' }, 'New queue'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' },
      field('name', 'Name', name, 'Lower-case letters, digits, - and _.', 'nq'),
      SETTINGS.map(({ k, label }) => {
        inputs[k] = h('input', { type: 'text', inputmode: 'decimal', placeholder: k === 'weight' ? '1' : k === 'priority' ? '0' : 'none' });
        return field(k, label, inputs[k], null, 'nq');
      })),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create queue')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { name: name.value.trim() };
    for (const { k } of SETTINGS) {
      const v = value(k, inputs[k].value.trim());
      if (v !== null) body[k] = v;
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
  return form;
}
