// util.js - building DOM (text only goes through textContent: nothing from the API is ever
// parsed as HTML), and formatting sizes, GPU shares and times for people.

// h('a', {href: '#/', class: 'x'}, 'text', child, [more]) -> element.  Attributes starting with
// "on" are listeners; null/false attributes are left out; true gives an empty attribute.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function bytes(n) {
  if (n === null || n === undefined) return '—';
  let i = 0, v = Number(n);
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  const s = v >= 100 || i === 0 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return `${s.replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1')} ${UNITS[i]}`;
}

// 500 -> "0.5", 2000 -> "2", 125 -> "0.125"
export function gpuOf(milli) {
  if (milli === null || milli === undefined) return '—';
  return String(Math.round(milli) / 1000);
}

// What a job asked for, in GPUs: "0.5 GPU", "2 GPUs", "none".
export function jobGpu(j) {
  if (j.gpus) return `${j.gpus} GPU${j.gpus === 1 ? '' : 's'}`;
  if (!j.gpu) return 'none';
  return `${j.gpu} GPU${j.gpu > 1 ? 's' : ''}`;
}

// Busy device time in ms as people read it: 4210 -> "4.2 s", 95000 -> "1 min 35 s".
export function busy(ms) {
  if (ms === null || ms === undefined) return '—';
  return ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : span(ms / 1000);
}

export function pct(x) {
  return `${Math.round(x * 100)}%`;
}

export function time(s) {
  if (!s) return '—';
  const d = new Date(s);
  return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

// "3 s ago", "5 min ago", ...; s is an RFC 3339 string.
export function ago(s, now = Date.now()) {
  if (!s) return '—';
  return span((now - Date.parse(s)) / 1000) + ' ago';
}

export function span(sec) {
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return `${sec} s`;
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${sec % 60} s`;
  if (sec < 86400) return `${Math.floor(sec / 3600)} h ${Math.floor((sec % 3600) / 60)} min`;
  return `${Math.floor(sec / 86400)} d ${Math.floor((sec % 86400) / 3600)} h`;
}

export function duration(j, now = Date.now()) {
  if (!j.started_at) return '—';
  const end = j.finished_at ? Date.parse(j.finished_at) : now;
  return span((end - Date.parse(j.started_at)) / 1000);
}

// A command line for people: argv joined, quoting what needs it.
export function command(j) {
  if (j.shell) return j.argv[0];
  return j.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

// A suspended job is running with its GPU work held (POST /v1/jobs/ID/suspend): active too.
export const ACTIVE = new Set(['pending', 'running', 'suspended']);

export function stateBadge(state, reason) {
  return h('span', { class: `badge st-${state}`, title: reason || null }, state);
}

// A stable colour per job id (the slice's colour in every bar and legend).
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#e15759', '#76b7b2', '#edc948', '#9c755f', '#ff9da7', '#86bcb6'];
export function colourOf(id) {
  return PALETTE[(Math.max(1, Number(id)) - 1) % PALETTE.length];
}

// Shell-like split of a command line into argv (quotes and backslashes; no expansion).
// Returns null when a quote is left open.
export function splitArgs(s) {
  const out = [];
  let cur = '', inArg = false, q = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q === "'") { if (c === "'") q = null; else cur += c; continue; }
    if (q === '"') {
      if (c === '"') q = null;
      else if (c === '\\' && i + 1 < s.length && '"\\$`'.includes(s[i + 1])) cur += s[++i];
      else cur += c;
      continue;
    }
    if (c === "'" || c === '"') { q = c; inArg = true; continue; }
    if (c === '\\' && i + 1 < s.length) { cur += s[++i]; inArg = true; continue; }
    if (/\s/.test(c)) { if (inArg) { out.push(cur); cur = ''; inArg = false; } continue; }
    cur += c; inArg = true;
  }
  if (q) return null;
  if (inArg) out.push(cur);
  return out;
}
