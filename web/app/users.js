// users.js - users and tokens.  An admin lists, adds and deletes users, and creates and
// revokes anyone's tokens; a user sees and manages their own tokens.  A new token's secret is
// shown once (the API never answers it again).

import { api } from './api.js';
import { h, clear, time } from './util.js';
import { confirmButton, keepFocus, flash, field, clearErrors, showError } from './widgets.js';

export function mount(ctx, store) {
  ctx.title = store.admin ? 'Users & tokens' : 'Tokens';
  ctx.msg = h('div', { role: 'status' });
  ctx.secret = h('div', {});
  ctx.users = h('div', { class: 'tablewrap' });
  ctx.tokens = h('div', { class: 'tablewrap' });
  ctx.root.append(h('h1', {}, ctx.title), ctx.msg, ctx.secret);
  if (store.admin) ctx.root.append(h('h2', {}, 'Users'), ctx.users, userForm(ctx, store));
  ctx.root.append(h('h2', {}, 'Tokens'), ctx.tokens, tokenForm(ctx, store));
  load(ctx, store);
}

export function update() {
  // Users and tokens change only through this page (or the CLI); it reloads after each change
  // rather than polling.
}

async function load(ctx, store) {
  try {
    const [u, t] = await Promise.all([store.admin ? api.users() : { users: [] }, api.tokens()]);
    ctx.userList = u.users;
    ctx.tokenList = t.tokens;
    if (store.admin) renderUsers(ctx, store);
    renderTokens(ctx, store);
    const sel = ctx.root.querySelector('#tk-user');
    if (sel && store.admin) {
      const v = sel.value;
      clear(sel, ctx.userList.map((x) => h('option', { value: x.name, selected: x.name === (v || store.me.user) }, x.name)));
    }
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

function showSecret(ctx, user, token) {
  const code = h('code', { class: 'secret', id: 'new-token' }, token);
  clear(ctx.secret, h('div', { class: 'card callout', role: 'alert' },
    h('p', {}, h('strong', {}, `New token for ${user}. `), 'Copy it now: it is not shown again.'),
    h('p', {}, code, ' ', h('button', { type: 'button', class: 'btn small', onclick: async (e) => {
      try { await navigator.clipboard.writeText(token); e.currentTarget.textContent = 'Copied'; } catch {
        const r = document.createRange(); r.selectNodeContents(code); getSelection().removeAllRanges(); getSelection().addRange(r);
        e.currentTarget.textContent = 'Selected: press Ctrl+C';
      }
    } }, 'Copy')),
    h('button', { type: 'button', class: 'btn small', onclick: () => clear(ctx.secret) }, 'Done')));
}

function renderUsers(ctx, store) {
  keepFocus(ctx.users, () => clear(ctx.users, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, 'Users'),
    h('thead', {}, h('tr', {}, ['User', 'Role', 'Active jobs', 'Created'].map((c, i) => h('th', { scope: 'col', class: i === 2 ? 'num' : null }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))),
    h('tbody', {}, ctx.userList.map((u) => h('tr', { 'data-user': u.name },
      h('td', { 'data-label': 'User' }, h('a', { href: `#/jobs?user=${encodeURIComponent(u.name)}` }, u.name)),
      h('td', { 'data-label': 'Role' }, u.role),
      h('td', { class: 'num', 'data-label': 'Active jobs' }, String(u.jobs_active ?? 0)),
      h('td', { 'data-label': 'Created' }, time(u.created_at)),
      h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'btn small', 'data-key': `tok-${u.name}`, 'aria-label': `New token for ${u.name}`, onclick: async () => {
          try { const t = await api.createToken({ user: u.name }); showSecret(ctx, u.name, t.token); load(ctx, store); } catch (e) { flash(ctx.msg, e.message, true); }
        } }, 'New token'),
        u.name === store.me.user ? null : confirmButton('Delete', `Delete user ${u.name}?`, `deluser-${u.name}`, async () => {
          try { await api.deleteUser(u.name); flash(ctx.msg, `User ${u.name} deleted; their tokens are revoked, their jobs stay.`); } catch (e) { flash(ctx.msg, e.message, true); }
          load(ctx, store);
        }))))))));
}

function renderTokens(ctx, store) {
  const list = ctx.tokenList;
  keepFocus(ctx.tokens, () => clear(ctx.tokens, list.length === 0 ? h('p', { class: 'empty' }, 'No token.') : h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, 'Tokens'),
    h('thead', {}, h('tr', {}, ['ID', 'User', 'Name', 'Created'].map((c, i) => h('th', { scope: 'col', class: i === 0 ? 'num' : null }, c)),
      h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))),
    h('tbody', {}, list.map((t) => h('tr', { 'data-token': t.id },
      h('td', { class: 'num', 'data-label': 'ID' }, String(t.id)),
      h('td', { 'data-label': 'User' }, t.user),
      h('td', { 'data-label': 'Name' }, t.name || '—', t.id === store.me.token_id ? [' ', h('span', { class: 'badge' }, 'this session')] : null),
      h('td', { 'data-label': 'Created' }, time(t.created_at)),
      h('td', { class: 'actions' }, t.id === store.me.token_id ? null : confirmButton('Revoke', `Revoke token ${t.id}?`, `revoke-${t.id}`, async () => {
        try { await api.deleteToken(t.id); flash(ctx.msg, `Token ${t.id} revoked.`); } catch (e) { flash(ctx.msg, e.message, true); }
        load(ctx, store);
      }))))))));
}

function userForm(ctx, store) {
  const name = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. alice' });
  const role = h('select', {}, h('option', { value: 'user' }, 'user'), h('option', { value: 'admin' }, 'admin'));
  const withToken = h('input', { type: 'checkbox', id: 'nu-token', checked: true });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'nu-title' },
    h('h3', { id: 'nu-title' }, 'Add a user'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' }, field('name', 'Name', name, 'Lower-case letters, digits, - and _.', 'nu'), field('role', 'Role', role, null, 'nu')),
    h('div', { class: 'check' }, withToken, h('label', { for: 'nu-token' }, 'Also create a token for them')),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Add user')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const u = await api.createUser({ name: name.value.trim(), role: role.value });
      if (withToken.checked) {
        const t = await api.createToken({ user: u.name });
        showSecret(ctx, u.name, t.token);
      } else {
        flash(ctx.msg, `User ${u.name} added.`);
      }
      name.value = '';
      load(ctx, store);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}

function tokenForm(ctx, store) {
  const name = h('input', { type: 'text', autocomplete: 'off', placeholder: 'e.g. laptop' });
  const user = store.admin ? h('select', {}, h('option', { value: store.me.user }, store.me.user)) : null;
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'tk-title' },
    h('h3', { id: 'tk-title' }, 'Create a token'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('div', { class: 'row' }, user ? field('user', 'For user', user, null, 'tk') : null, field('name', 'Label', name, 'Where it will be used.', 'tk')),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Create token')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = {};
    if (user) body.user = user.value;
    if (name.value.trim()) body.name = name.value.trim();
    try {
      const t = await api.createToken(body);
      showSecret(ctx, t.user, t.token);
      name.value = '';
      load(ctx, store);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}
