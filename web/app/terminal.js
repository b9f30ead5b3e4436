// terminal.js - a running job's terminal in the browser (docs/terminal.md, "From a browser"):
// a job started with a terminal (tessel run -it) is attached; any other running process job of
// the caller gets a new shell in it (exec, as `tessel shell`).  xterm.js draws the terminal; it
// is served by tesseld from the staged console's vendor directory (the version in its name,
// installed from npm by the project's build), never from elsewhere.
//
// A browser's WebSocket cannot send the Authorization header, so the page first asks for a
// ticket with the token (POST /v1/jobs/ID/terminal-ticket: good once, for 30 s, for this job,
// this route and this user) and opens the WebSocket with ?ticket=.  The messages are the
// terminal's (a type byte and a payload): 'i' input and 'r' rows/columns out; 'o' output,
// 'n' a notice and 'x' the end in.

import { request } from './api.js';
import { h, clear, stateBadge } from './util.js';
import { flash } from './widgets.js';

export const XTERM = '/vendor/xterm-6.0.0';
// What `tessel shell` runs: the job's $SHELL when /etc/shells lists it, else /bin/sh, as a login
// shell; with TERM set for xterm.js when the job's environment has none.
export const SHELL_ARGV = ['/bin/sh', '-c', 'export TERM="${TERM:-xterm-256color}"; s=${SHELL:-/bin/sh}; grep -qx "$s" /etc/shells 2>/dev/null || s=/bin/sh; exec "$s" -l'];
const INPUT_MAX = 4096; // bytes of one 'i' message (docs/terminal.md)

const enc = new TextEncoder();
const dec = new TextDecoder();

// One terminal message: the type's letter, then the payload.
export function message(type, payload) {
  const m = new Uint8Array(1 + payload.length);
  m[0] = type.charCodeAt(0);
  m.set(payload, 1);
  return m;
}

export function resizeMessage(rows, cols) {
  const clamp = (n) => Math.max(1, Math.min(1000, n | 0));
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint16(0, clamp(rows));
  new DataView(p.buffer).setUint16(2, clamp(cols));
  return message('r', p);
}

// What a closed connection means for the person, from its close code and reason.
export function closeText(code, reason, ended, route) {
  if (ended) return ended;
  if (code === 1001) return `Disconnected from tesseld (${reason || 'it is stopping'}). The job goes on: Reconnect when tesseld is back.`;
  if (code === 1000) return `The terminal closed${reason ? `: ${reason}` : ''}.`;
  if (code === 1006) return 'The connection to tesseld was lost. The job goes on' + (route === 'exec' ? ', but this shell was hung up.' : '.');
  return `The connection closed (code ${code}${reason ? `: ${reason}` : ''}).`;
}

let cssLoaded = false;
function loadCss() {
  if (cssLoaded) return;
  cssLoaded = true;
  document.head.append(h('link', { rel: 'stylesheet', href: `${XTERM}/xterm.css` }));
}

export function mount(ctx, store) {
  const id = ctx.route.id;
  ctx.id = id;
  ctx.title = `Terminal · job ${id}`;
  ctx.status = h('span', { class: 'sub', id: 'term-status', role: 'status' }, 'connecting…');
  ctx.msg = h('div', { role: 'alert', id: 'term-msg' });
  ctx.actions = h('div', { class: 'headactions' });
  ctx.box = h('div', { class: 'termbox', id: 'terminal', 'aria-label': `Terminal of job ${id}` });
  ctx.root.append(
    h('p', { class: 'crumbs' }, h('a', { href: `#/jobs/${id}` }, `← Job ${id}`)),
    h('div', { class: 'pagehead' }, h('h1', {}, `Terminal · job ${id} `, ctx.status), ctx.actions),
    ctx.msg, ctx.box);
  ctx.gone = false;
  open(ctx);
}

export function unmount(ctx) {
  ctx.gone = true;
  teardown(ctx);
}

function teardown(ctx) {
  ctx.observer?.disconnect();
  ctx.observer = null;
  window.removeEventListener('resize', ctx.onWinResize || (() => {}));
  if (ctx.ws) { ctx.ws.onclose = null; try { ctx.ws.close(1000); } catch { /* already closed */ } }
  ctx.ws = null;
  ctx.term?.dispose();
  ctx.term = null;
}

function setStatus(ctx, text, state) {
  ctx.status.textContent = `· ${text}`;
  ctx.box.dataset.state = state;
}

function reconnectButton(ctx, label) {
  clear(ctx.actions, h('button', {
    type: 'button', class: 'btn', id: 'term-reconnect',
    onclick: () => { clear(ctx.actions); clear(ctx.msg); open(ctx); },
  }, label));
}

async function open(ctx) {
  teardown(ctx);
  clear(ctx.box);
  setStatus(ctx, 'connecting…', 'connecting');
  const id = ctx.id;
  let job, mods;
  try {
    job = await request('GET', `/v1/jobs/${id}`);
  } catch (e) {
    setStatus(ctx, 'not opened', 'error');
    flash(ctx.msg, e.status === 404 ? `There is no job ${id} (or it is another user's).` : e.message, true);
    return;
  }
  if (ctx.gone) return;
  if (job.state !== 'running') {
    setStatus(ctx, 'not opened', 'error');
    clear(ctx.msg, h('p', { class: 'error' }, `Job ${id} is not running (`, stateBadge(job.state),
      '): a terminal opens in a running job only. ', h('a', { href: `#/jobs/${id}` }, 'Its output is on its page.')));
    return;
  }
  if (ctx.store?.me && job.user !== ctx.store.me.user) {
    setStatus(ctx, 'not opened', 'error');
    flash(ctx.msg, `Job ${id} is ${job.user}'s: only its owner may use its terminal.`, true);
    return;
  }
  const route = job.tty ? 'attach' : 'exec';
  try {
    mods = await Promise.all([import(`${XTERM}/xterm.mjs`), import(`${XTERM}/addon-fit.mjs`)]);
  } catch (e) {
    setStatus(ctx, 'not opened', 'error');
    flash(ctx.msg, `The terminal library (xterm.js) is not installed on this tesseld (${e.message}): its administrator runs \`npm ci\` in web/ and \`make\` (docs/console.md).`, true);
    return;
  }
  loadCss();
  let ticket;
  try {
    ticket = await request('POST', `/v1/jobs/${id}/terminal-ticket`, { route });
  } catch (e) {
    setStatus(ctx, 'not opened', 'error');
    flash(ctx.msg, e.message, true);
    return;
  }
  if (ctx.gone) return;
  const [{ Terminal }, { FitAddon }] = mods;
  const term = new Terminal({ cursorBlink: true, convertEol: false, scrollback: 5000,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 14 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(ctx.box);
  ctx.term = term;
  try { fit.fit(); } catch { /* not laid out yet */ }
  let url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${ticket.url}`;
  if (route === 'exec') url += `&argv=${encodeURIComponent(JSON.stringify(SHELL_ARGV))}`;
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  ctx.ws = ws;
  let ended = null;
  const send = (m) => { if (ws.readyState === WebSocket.OPEN) ws.send(m); };
  const sendInput = (bytes) => {
    for (let off = 0; off < bytes.length; off += INPUT_MAX) send(message('i', bytes.subarray(off, off + INPUT_MAX)));
  };
  term.onData((s) => sendInput(enc.encode(s)));
  term.onBinary((s) => sendInput(Uint8Array.from(s, (c) => c.charCodeAt(0) & 255)));
  term.onResize(({ rows, cols }) => send(resizeMessage(rows, cols)));
  ctx.onWinResize = () => { try { fit.fit(); } catch { /* hidden */ } };
  window.addEventListener('resize', ctx.onWinResize);
  if (window.ResizeObserver) { ctx.observer = new ResizeObserver(ctx.onWinResize); ctx.observer.observe(ctx.box); }
  ws.onopen = () => {
    setStatus(ctx, route === 'attach' ? 'attached to the job\'s terminal' : 'a new shell in the job', 'open');
    send(resizeMessage(term.rows, term.cols));
    term.focus();
  };
  ws.onmessage = (ev) => {
    const m = new Uint8Array(ev.data);
    if (!m.length) return;
    const type = String.fromCharCode(m[0]), payload = m.subarray(1);
    if (type === 'o') term.write(payload);
    else if (type === 'n') term.write(`\r\n\x1b[2m[tessel] ${dec.decode(payload)}\x1b[0m\r\n`);
    else if (type === 'x') {
      const how = dec.decode(payload);
      ended = route === 'attach' ? `Job ${id} has ended (${how}).` : `The shell has ended (${how}).`;
    }
  };
  ws.onclose = (ev) => {
    if (ctx.gone) return;
    const text = closeText(ev.code, ev.reason, ended, route);
    setStatus(ctx, ended ? 'ended' : 'disconnected', ended ? 'ended' : 'closed');
    term.write(`\r\n\x1b[2m[tessel] ${text}\x1b[0m\r\n`);
    flash(ctx.msg, text, !ended);
    if (!ended || route === 'exec') reconnectButton(ctx, ended ? 'New shell' : 'Reconnect');
    ctx.ws = null;
  };
}
