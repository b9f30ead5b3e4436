// services.js - inference services (docs/serving.md): the caller's services (an admin: all),
// each with its endpoint and replicas (GPU, health, proxy weight, measured rate, share of the
// traffic, latency), scaling, deletion after a confirmation, and its tokens: create (the
// secret shown once), list, revoke.  Figures come from GET /v1/services, read again every 2 s
// (tesseld measures over ~2 s); the API's errors are shown beside the field they name.

import { request } from './api.js';
import { h, clear } from './util.js';
import { keepFocus, flash, field, clearErrors, showError, confirmButton } from './widgets.js';

const POLL_MS = 2000;
const enc = encodeURIComponent;

export function mount(ctx) {
  ctx.title = 'Services';
  ctx.msg = h('div', { role: 'status' });
  ctx.list = h('div', {});
  ctx.tokens = new Map(); // service -> its token list, read when its card is first drawn
  ctx.forms = new Map();  // service -> its scale and token forms, kept across polls
  ctx.root.append(h('h1', {}, 'Services'),
    h('p', { class: 'sub' }, 'Your inference services: replicas behind one endpoint, with the traffic split by each replica\u2019s measured rate (tessel serve).'),
    ctx.msg, ctx.list);
  load(ctx);
  ctx.timer = setInterval(() => load(ctx), POLL_MS);
}

export function unmount(ctx) {
  clearInterval(ctx.timer);
}

export function update() {}

async function load(ctx) {
  try {
    const { services } = await request('GET', '/v1/services');
    render(ctx, services);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

function render(ctx, services) {
  if (!services.length) {
    clear(ctx.list, h('p', { class: 'empty' }, 'No service yet: start one with tessel serve NAME --replicas N -- CMD.'));
    return;
  }
  keepFocus(ctx.list, () => clear(ctx.list, ...services.map((s) => card(ctx, s))));
}

const num = (v, digits = 1) => (v === null || v === undefined ? '—' : Number(v).toFixed(digits));
const share = (v) => (v === null || v === undefined ? '—' : `${Math.round(v * 100)} %`);
const gpuText = (gpus) => (gpus && gpus.length
  ? gpus.map((g) => `gpu${g.index} ${g.model} ×${(g.milli / 1000).toString()}`).join(', ')
  : '—');

function card(ctx, s) {
  return h('section', { class: 'card', 'data-service': s.name, 'aria-labelledby': `svc-${s.name}` },
    h('h2', { id: `svc-${s.name}` }, s.name),
    h('p', {}, 'Endpoint ', h('code', { 'data-key': 'ep:' + s.name }, s.endpoint),
      ` · ${s.running} of ${s.replicas} replica${s.replicas === 1 ? '' : 's'} running · split ${s.split} · health ${s.health}`,
      s.owner ? ` · owner ${s.owner}` : ''),
    replicas(s),
    h('div', { class: 'row' }, scaleForm(ctx, s),
      confirmButton('Delete', `Delete service ${s.name}?`, 'del:' + s.name, () => remove(ctx, s.name))),
    tokensBox(ctx, s));
}

function replicas(s) {
  const reps = s.replica_jobs || [];
  if (!reps.length) return h('p', { class: 'empty' }, 'No replica.');
  const cols = ['Job', 'GPU', 'Health', 'Weight', 'Rate (req/s)', 'Share', 'Latency (ms)'];
  return h('div', { class: 'tablewrap' }, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, `Replicas of ${s.name}`),
    h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i >= 3 ? 'num' : null }, c)))),
    h('tbody', {}, reps.map((r) => h('tr', { 'data-replica': String(r.job) },
      h('td', { 'data-label': 'Job' }, h('a', { href: `#/jobs/${r.job}` }, String(r.job)), r.state === 'running' ? '' : ` (${r.state})`),
      h('td', { 'data-label': 'GPU' }, gpuText(r.gpus)),
      h('td', { 'data-label': 'Health' }, r.stopping ? 'stopping' : r.health),
      h('td', { class: 'num', 'data-label': 'Weight' }, r.weight === null ? '—' : String(r.weight)),
      h('td', { class: 'num', 'data-label': 'Rate (req/s)' }, num(r.service_rate)),
      h('td', { class: 'num', 'data-label': 'Share' }, share(r.share)),
      h('td', { class: 'num', 'data-label': 'Latency (ms)' }, num(r.latency_ms)))))));
}

// The forms are made once per service and kept, so that a poll does not wipe what is typed.
function forms(ctx, name) {
  if (!ctx.forms.has(name)) ctx.forms.set(name, { scale: makeScale(ctx, name), token: makeToken(ctx, name) });
  return ctx.forms.get(name);
}

function scaleForm(ctx, s) {
  const f = forms(ctx, s.name).scale;
  const input = f.querySelector('input');
  if (document.activeElement !== input && !f.classList.contains('dirty')) input.value = String(s.replicas);
  return f;
}

function makeScale(ctx, name) {
  const input = h('input', { type: 'number', min: 0, max: 64, step: 1, required: true, inputmode: 'numeric' });
  const form = h('form', { class: 'card form inline', novalidate: true, 'aria-label': `Scale ${name}` },
    field('replicas', 'Replicas', input, '0 to 64', `sc-${name}`),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('button', { type: 'submit', class: 'btn primary' }, 'Scale'));
  input.addEventListener('input', () => form.classList.add('dirty'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const v = input.value.trim();
    // The API says what is wrong with a number; text that is not one is sent as it is typed.
    const n = /^-?\d+$/.test(v) ? Number(v) : v;
    try {
      const s = await request('PATCH', `/v1/services/${enc(name)}`, { replicas: n });
      form.classList.remove('dirty');
      flash(ctx.msg, `Service ${name}: ${s.replicas} replica${s.replicas === 1 ? '' : 's'} wanted.`);
      load(ctx);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}

async function remove(ctx, name) {
  try {
    await request('DELETE', `/v1/services/${enc(name)}`);
    ctx.forms.delete(name);
    ctx.tokens.delete(name);
    flash(ctx.msg, `Service ${name} deleted: its replicas stop.`);
    load(ctx);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

// ---- tokens --------------------------------------------------------------------------------------

function tokensBox(ctx, s) {
  if (!ctx.tokens.has(s.name)) {
    ctx.tokens.set(s.name, h('div', { class: 'tokens', 'data-tokens': s.name }));
    loadTokens(ctx, s.name);
  }
  return h('div', {}, h('h3', {}, 'Tokens'),
    h('p', { class: 'help' }, 'Callers with a service token may call the endpoint (Authorization: Bearer TOKEN); so may you, with your own API token.'),
    ctx.tokens.get(s.name), forms(ctx, s.name).token);
}

async function loadTokens(ctx, name) {
  const box = ctx.tokens.get(name);
  try {
    const { tokens } = await request('GET', `/v1/services/${enc(name)}/tokens`);
    keepFocus(box, () => clear(box, tokens.length
      ? h('table', { class: 'data' },
        h('caption', { class: 'sr-only' }, `Tokens of ${name}`),
        h('thead', {}, h('tr', {}, ['ID', 'Name', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, tokens.map((t) => h('tr', { 'data-token': String(t.id) },
          h('td', { 'data-label': 'ID' }, String(t.id)),
          h('td', { 'data-label': 'Name' }, t.name || '—'),
          h('td', { 'data-label': 'Created' }, t.created_at || '—'),
          h('td', {}, confirmButton('Revoke', `Revoke token ${t.id} of ${name}?`, `rv:${name}:${t.id}`, () => revoke(ctx, name, t.id)))))))
      : h('p', { class: 'empty' }, 'No service token.')));
  } catch (e) {
    clear(box, h('p', { class: 'error' }, e.message));
  }
}

async function revoke(ctx, name, id) {
  try {
    await request('DELETE', `/v1/services/${enc(name)}/tokens/${id}`);
    flash(ctx.msg, `Token ${id} of ${name} revoked.`);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
  loadTokens(ctx, name);
}

function makeToken(ctx, name) {
  const label = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const shown = h('div', { class: 'secret', role: 'alert' });
  const form = h('form', { class: 'card form inline', novalidate: true, 'aria-label': `New token for ${name}` },
    field('name', 'Label', label, 'optional, e.g. frontend', `tk-${name}`),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('button', { type: 'submit', class: 'btn' }, 'Create token'), shown);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    clear(shown);
    try {
      const body = label.value.trim() ? { name: label.value.trim() } : {};
      const t = await request('POST', `/v1/services/${enc(name)}/tokens`, body);
      label.value = '';
      clear(shown, h('p', {}, 'The token, shown this once (copy it now): '),
        h('code', { class: 'token', 'data-secret': String(t.id) }, t.token));
      loadTokens(ctx, name);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}
