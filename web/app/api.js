// api.js - the console's client of tesseld's /v1 API (docs/api.md): the token, JSON requests,
// API errors as exceptions that keep the error's code and field, and following a job's log.
//
// Where the token lives: sessionStorage by default (this tab only, gone when the tab closes:
// a lab's shared machine does not keep a bearer token that carries all of its owner's rights),
// localStorage when the person ticks "Remember me on this device".  Never in the URL.

const KEY = 'tessel.token';

export function getToken() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || '';
}

export function setToken(token, remember) {
  clearToken();
  (remember ? localStorage : sessionStorage).setItem(KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

// An answer of 4xx/5xx, or no answer at all (status 0).
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || null;
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function headers(token, json) {
  const h = { Authorization: `Bearer ${token}` };
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

async function errorOf(res) {
  let code = 'http_' + res.status, message = `${res.status} ${res.statusText}`, field = null;
  try {
    const body = await res.json();
    if (body && body.error) ({ code, message, field } = body.error);
  } catch { /* not JSON: keep the status line */ }
  return new ApiError(res.status, code, message, field);
}

// request('GET', '/v1/jobs') -> parsed JSON (null for 204).  Throws ApiError.
export async function request(method, path, body, token = getToken()) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headers(token, body !== undefined),
      body: body !== undefined ? JSON.stringify(body) : undefined,
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'network', `tesseld did not answer (${e.message})`, null);
  }
  if (res.status === 401 && token === getToken()) onUnauthorized();
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return null;
  return res.json();
}

export const api = {
  whoami: (token) => request('GET', '/v1/whoami', undefined, token),
  health: async () => (await fetch('/healthz', { cache: 'no-store' })).json(),
  gpus: () => request('GET', '/v1/gpus'),
  nodes: () => request('GET', '/v1/nodes'),
  jobs: (query) => request('GET', '/v1/jobs' + (query ? '?' + new URLSearchParams(query) : '')),
  job: (id) => request('GET', `/v1/jobs/${id}`),
  submit: (spec) => request('POST', '/v1/jobs', spec),
  cancel: (id) => request('POST', `/v1/jobs/${id}/cancel`, {}),
  suspend: (id) => request('POST', `/v1/jobs/${id}/suspend`, {}),
  resume: (id) => request('POST', `/v1/jobs/${id}/resume`, {}),
  queues: () => request('GET', '/v1/queues'),
  createQueue: (q) => request('POST', '/v1/queues', q),
  updateQueue: (name, patch) => request('PATCH', `/v1/queues/${encodeURIComponent(name)}`, patch),
  deleteQueue: (name) => request('DELETE', `/v1/queues/${encodeURIComponent(name)}`),
  users: () => request('GET', '/v1/users'),
  createUser: (u) => request('POST', '/v1/users', u),
  deleteUser: (name) => request('DELETE', `/v1/users/${encodeURIComponent(name)}`),
  tokens: () => request('GET', '/v1/tokens'),
  createToken: (t) => request('POST', '/v1/tokens', t),
  deleteToken: (id) => request('DELETE', `/v1/tokens/${id}`),
  projects: () => request('GET', '/v1/projects'),
  project: (name) => request('GET', `/v1/projects/${encodeURIComponent(name)}`),
  createProject: (p) => request('POST', '/v1/projects', p),
  addMember: (name, m) => request('POST', `/v1/projects/${encodeURIComponent(name)}/members`, m),
  setMemberRole: (name, user, role) => request('PATCH', `/v1/projects/${encodeURIComponent(name)}/members/${encodeURIComponent(user)}`, { role }),
  removeMember: (name, user) => request('DELETE', `/v1/projects/${encodeURIComponent(name)}/members/${encodeURIComponent(user)}`),
  folders: () => request('GET', '/v1/folders'),
  createFolder: (f) => request('POST', '/v1/folders', f),
  // A job's web service (docs/job-services.md): a single-use URL on the service's own origin.
  serviceTicket: (id, name) => request('POST', `/v1/jobs/${id}/services/${encodeURIComponent(name)}/ticket`),
};

// Follow one stream of a job's log: GET .../logs?stream=S&offset=N&follow=1 read with
// fetch + ReadableStream; onText(text) for each piece as it arrives.  When the connection
// drops (or ends) while the job is still active, it reconnects from the byte offset reached
// (after RETRY_MS).  Resolves when tesseld ended the answer for a finished job; stops on signal.abort().
const RETRY_MS = 2000;
export async function followLog(id, stream, onText, signal, onState = () => {}) {
  let offset = 0;
  const decoder = new TextDecoder();
  for (;;) {
    let res;
    try {
      res = await fetch(`/v1/jobs/${id}/logs?stream=${stream}&offset=${offset}&follow=1`, {
        headers: headers(getToken(), false), signal, cache: 'no-store',
      });
    } catch (e) {
      if (signal.aborted) return;
      onState('retrying');
      await sleep(RETRY_MS, signal);
      if (signal.aborted) return;
      continue;
    }
    if (!res.ok) throw await errorOf(res);
    onState('following', res.headers.get('X-Tessel-Job-State'));
    const reader = res.body.getReader();
    let broken = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        offset += value.byteLength;
        const text = decoder.decode(value, { stream: true });
        if (text) onText(text);
      }
    } catch (e) {
      if (signal.aborted) return;
      broken = true;
    }
    if (!broken) {
      // tesseld ends the answer when the job has finished and everything was sent; an answer
      // that ended otherwise (a proxy or an idle timeout closing it cleanly) is resumed.
      let state = 'finished';
      try { state = (await request('GET', `/v1/jobs/${id}`)).state; } catch { /* keep 'finished' */ }
      if (state !== 'pending' && state !== 'running' && state !== 'suspended') {
        const tail = decoder.decode();
        if (tail) onText(tail);
        onState('ended');
        return;
      }
    }
    onState('retrying');
    await sleep(RETRY_MS, signal);
    if (signal.aborted) return;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
