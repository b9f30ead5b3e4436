// folders.js - virtual folders (docs/folders.md): the list of the folders the caller may reach
// (an admin: all) with a form to make one, and a folder's file browser: its directories and
// files (GET /v1/folders/NAME/files), a file's download, and uploads by drag and drop or a file
// picker (PUT, small files: tesseld's --max-body bounds them; rsync and scp do large ones).
//
// tesseld reads and writes the files as the caller's own account: what the page shows or
// refuses is the file system's answer, shown as tesseld words it.

import { api, request, getToken, ApiError } from './api.js';
import { h, clear, bytes } from './util.js';
import { keepFocus, flash, field, clearErrors, showError } from './widgets.js';

export function mount(ctx, store) {
  if (ctx.route.name === 'folder') return mountOne(ctx);
  ctx.title = 'Folders';
  ctx.msg = h('div', { role: 'status' });
  ctx.table = h('div', { class: 'tablewrap' });
  ctx.root.append(h('h1', {}, 'Folders'),
    h('p', { class: 'sub' }, 'Shared directories: read-only or read-write for those a folder is shared with, in jobs (tessel run --folder) and here.'),
    ctx.msg, ctx.table, h('h2', {}, 'New folder'), createForm(ctx));
  loadList(ctx);
}

export function update() {}

// ---- the list --------------------------------------------------------------------------------

async function loadList(ctx) {
  try {
    const { folders } = await api.folders();
    renderList(ctx, folders);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

function renderList(ctx, folders) {
  if (!folders.length) { clear(ctx.table, h('p', { class: 'empty' }, 'No folder is shared with you yet.')); return; }
  keepFocus(ctx.table, () => clear(ctx.table, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, 'Folders'),
    h('thead', {}, h('tr', {}, ['Folder', 'Owner', 'Project', 'Your access', 'Path']
      .map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, folders.map((f) => h('tr', { 'data-folder': f.name },
      h('td', { 'data-label': 'Folder' }, h('a', { href: `#/folders/${encodeURIComponent(f.name)}` }, f.name)),
      h('td', { 'data-label': 'Owner' }, f.owner),
      h('td', { 'data-label': 'Project' }, f.project || '—'),
      h('td', { 'data-label': 'Your access' }, f.access),
      h('td', { 'data-label': 'Path' }, h('code', {}, f.path))))))));
}

function createForm(ctx) {
  const name = h('input', { type: 'text', required: true, autocomplete: 'off', spellcheck: 'false' });
  const project = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'card form', novalidate: true, 'aria-label': 'New folder' },
    field('name', 'Name', name, 'a-z, 0-9, _ and -, starting with a letter', 'nf'),
    field('project', 'Project', project, "optional: the project's folder (its members write it, its viewers read it)", 'nf'),
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    h('button', { type: 'submit', class: 'btn primary' }, 'Create folder'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const spec = { name: name.value.trim() };
      if (project.value.trim()) spec.project = project.value.trim();
      await api.createFolder(spec);
      name.value = '';
      project.value = '';
      flash(ctx.msg, `Folder ${spec.name} created.`);
      loadList(ctx);
    } catch (e) {
      showError(form, e);
    }
  });
  return form;
}

// ---- one folder: its files ---------------------------------------------------------------------

function mountOne(ctx) {
  const name = ctx.route.folder;
  const dir = ctx.route.params.get('path') || '';
  ctx.title = `Folder ${name}`;
  ctx.msg = h('div', { role: 'status' });
  ctx.files = h('div', { class: 'tablewrap' });
  const picker = h('input', { type: 'file', multiple: true, id: 'fb-pick', 'aria-label': 'Upload files' });
  ctx.drop = h('div', { class: 'card dropzone', id: 'fb-drop', tabindex: 0, 'aria-describedby': 'fb-drop-help' },
    h('p', { id: 'fb-drop-help' }, 'Drop files here to upload them into this directory (small files; rsync or scp for large ones), or pick them: '),
    picker);
  picker.addEventListener('change', () => upload(ctx, name, dir, [...picker.files]).then(() => { picker.value = ''; }));
  ctx.drop.addEventListener('dragover', (ev) => { ev.preventDefault(); ctx.drop.classList.add('over'); });
  ctx.drop.addEventListener('dragleave', () => ctx.drop.classList.remove('over'));
  ctx.drop.addEventListener('drop', (ev) => {
    ev.preventDefault();
    ctx.drop.classList.remove('over');
    upload(ctx, name, dir, [...(ev.dataTransfer?.files || [])]);
  });
  ctx.root.append(h('h1', {}, `Folder ${name}`), crumbs(name, dir), ctx.msg, ctx.files, ctx.drop);
  loadDir(ctx, name, dir);
}

// The path as links: folder / sub / dir.
function crumbs(name, dir) {
  const parts = dir ? dir.split('/') : [];
  const link = (label, p) => h('a', { href: `#/folders/${encodeURIComponent(name)}${p ? '?path=' + encodeURIComponent(p) : ''}` }, label);
  const out = [link(name, '')];
  parts.forEach((part, i) => out.push(' / ', i === parts.length - 1 ? h('span', {}, part) : link(part, parts.slice(0, i + 1).join('/'))));
  return h('nav', { class: 'crumbs', 'aria-label': 'Directory' }, out);
}

const filesPath = (name, p) => `/v1/folders/${encodeURIComponent(name)}/files?path=${encodeURIComponent(p)}`;

async function loadDir(ctx, name, dir) {
  try {
    const ans = await request('GET', filesPath(name, dir));
    renderDir(ctx, name, dir, ans);
  } catch (e) {
    clear(ctx.files, h('p', { class: 'error' }, e.status === 404 && !dir ? `No folder ${name}.` : e.message));
    ctx.drop.hidden = true;
  }
}

function renderDir(ctx, name, dir, ans) {
  const join = (n) => (dir ? `${dir}/${n}` : n);
  if (!ans.entries.length) { clear(ctx.files, h('p', { class: 'empty' }, 'This directory is empty.')); return; }
  keepFocus(ctx.files, () => clear(ctx.files, h('table', { class: 'data' },
    h('caption', { class: 'sr-only' }, 'Files'),
    h('thead', {}, h('tr', {}, ['Name', 'Type', 'Size', 'Modified'].map((c, i) => h('th', { scope: 'col', class: i === 2 ? 'num' : null }, c)))),
    h('tbody', {}, ans.entries.map((e) => h('tr', { 'data-file': e.name, 'data-type': e.type },
      h('td', { 'data-label': 'Name' }, e.type === 'dir'
        ? h('a', { href: `#/folders/${encodeURIComponent(name)}?path=${encodeURIComponent(join(e.name))}` }, e.name + '/')
        : e.type === 'file'
          ? h('button', { type: 'button', class: 'linkish', 'data-key': 'dl:' + e.name, 'aria-label': `Download ${e.name}`, onclick: () => download(ctx, name, join(e.name), e.name) }, e.name)
          : e.name),
      h('td', { 'data-label': 'Type' }, e.type),
      h('td', { class: 'num', 'data-label': 'Size' }, e.type === 'file' ? bytes(e.size) : ''),
      h('td', { 'data-label': 'Modified' }, new Date(e.mtime * 1000).toISOString().replace('T', ' ').slice(0, 19))))),
    ans.truncated ? h('caption', {}, 'The first 10,000 entries.') : null)));
}

// A download needs the token (an Authorization header), so not a plain link: fetched, then
// saved from a blob URL.
async function download(ctx, name, path, base) {
  try {
    const res = await fetch(filesPath(name, path), { headers: { Authorization: `Bearer ${getToken()}` }, cache: 'no-store' });
    if (!res.ok) {
      let msg = `${res.status} ${res.statusText}`;
      try { msg = (await res.json()).error.message; } catch { /* keep the status line */ }
      throw new ApiError(res.status, 'http', msg, null);
    }
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', { href: url, download: base, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    flash(ctx.msg, e.message, true);
  }
}

// Upload each file into dir (PUT, its bytes as the body); the directory is read again after.
async function upload(ctx, name, dir, files) {
  if (!files.length) return;
  const done = [], failed = [];
  for (const f of files) {
    const path = dir ? `${dir}/${f.name}` : f.name;
    try {
      const res = await fetch(filesPath(name, path), {
        method: 'PUT', body: f, cache: 'no-store',
        headers: { Authorization: `Bearer ${getToken()}`, 'Content-Type': 'application/octet-stream' },
      });
      if (!res.ok) {
        let msg = `${res.status} ${res.statusText}`;
        try { msg = (await res.json()).error.message; } catch { /* keep the status line */ }
        failed.push(`${f.name}: ${msg}`);
      } else {
        done.push(f.name);
      }
    } catch (e) {
      failed.push(`${f.name}: ${e.message}`);
    }
  }
  if (failed.length) flash(ctx.msg, `Not uploaded: ${failed.join('; ')}`, true);
  else flash(ctx.msg, `Uploaded ${done.join(', ')}.`);
  loadDir(ctx, name, dir);
}
