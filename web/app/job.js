// job.js - one job: its request, placement and times, cancel, suspend/resume of its GPU work,
// and its output streaming live (stdout and stderr, each followed with fetch + ReadableStream
// on ?follow=1).

import { api, followLog } from './api.js';
import { h, clear, time, duration, command, jobGpu, bytes, stateBadge, ACTIVE } from './util.js';
import { confirmButton, flash } from './widgets.js';

// What a person can do about each reason a pending job waits for (reason_code; the codes and
// their figures are described in docs/scheduler-queues.md).
const WAIT_ADVICE = {
  Resources: 'It starts as soon as enough is free. Asking for less (a smaller share or less GPU memory) may start it sooner.',
  Priority: 'Jobs ahead of it in its queue wait for the same room; it starts after them.',
  QueueLimit: 'Its queue (or a parent queue) is at its limit: it starts when jobs of that queue end, or when an admin raises the limit.',
  GuaranteeLimit: 'Interactive and inference jobs must fit within the queue\'s guarantee: it starts when such jobs end; a training job could run beyond it.',
  Guarantee: 'Its queue is owed its guarantee: jobs borrowing from other queues are being stopped for it.',
  Preempting: 'Lower-priority jobs of its queue are being stopped to make room for it.',
  Reservation: 'The room it fits in is held for a job that has waited longer; it starts after that one.',
  Dependency: 'It starts once the jobs it depends on have ended.',
  ArrayTaskLimit: 'Its array already runs as many elements at once as its %N allows.',
};

// Output kept on the page per stream; older text is dropped (the whole log is at the API).
const MAX_LOG_CHARS = 1 << 20;

export function mount(ctx, store) {
  const id = ctx.route.id;
  ctx.title = `Job ${id}`;
  ctx.id = id;
  ctx.abort = new AbortController();
  ctx.head = h('div', { class: 'pagehead' });
  ctx.msg = h('div', { role: 'alert' });
  ctx.props = h('div', {});
  ctx.logs = {};
  const logBox = (stream) => {
    const pre = h('pre', { class: 'log', id: `log-${stream}`, tabindex: 0, role: 'log', 'aria-label': `${stream} of job ${id}` });
    const status = h('span', { class: 'sub', id: `log-${stream}-status` }, 'connecting…');
    ctx.logs[stream] = { pre, status, text: '' };
    return h('section', { class: 'logpane', 'aria-labelledby': `h-${stream}` },
      h('h3', { id: `h-${stream}` }, stream, ' ', status), pre);
  };
  const follow = h('input', { type: 'checkbox', id: 'autoscroll', checked: true });
  ctx.autoscroll = follow;
  ctx.root.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, '← Jobs')),
    ctx.head, ctx.msg, ctx.props,
    h('div', { class: 'pagehead' }, h('h2', {}, 'Output'),
      h('div', { class: 'check' }, follow, h('label', { for: 'autoscroll' }, 'Scroll with new output'))),
    h('div', { class: 'logs' }, logBox('stdout'), logBox('stderr')));
  render(ctx, store.jobs.get(id));
  api.job(id).then((j) => { store.jobs.set(j.id, j); render(ctx, j); startLogs(ctx); }).catch((e) => {
    clear(ctx.head, h('h1', {}, `Job ${id}`));
    flash(ctx.msg, e.status === 404 ? `There is no job ${id} (or it is another user's).` : e.message, true);
    for (const l of Object.values(ctx.logs)) l.status.textContent = '';
  });
}

export function unmount(ctx) {
  ctx.abort.abort();
}

export function update(ctx, store) {
  const j = store.jobs.get(ctx.id);
  if (j) render(ctx, j);
}

function startLogs(ctx) {
  for (const stream of ['stdout', 'stderr']) {
    const l = ctx.logs[stream];
    followLog(ctx.id, stream, (text) => {
      l.text += text;
      if (l.text.length > MAX_LOG_CHARS) l.text = '…' + l.text.slice(-MAX_LOG_CHARS);
      const atBottom = l.pre.scrollHeight - l.pre.scrollTop - l.pre.clientHeight < 40;
      l.pre.textContent = l.text;
      if (ctx.autoscroll.checked || atBottom) l.pre.scrollTop = l.pre.scrollHeight;
    }, ctx.abort.signal, (st) => {
      l.status.textContent = { following: '· live', ended: '· complete', retrying: '· reconnecting…' }[st] || '';
      l.pre.dataset.state = st;
      if (st === 'ended' && !l.text) l.pre.textContent = '(no output)';
    }).catch((e) => { l.status.textContent = `· ${e.message}`; });
  }
}

// Suspend / Resume for a job with a GPU that runs or is suspended (POST .../suspend, .../resume):
// reversible, so no confirmation; the outcome is announced in the page's alert region.
function suspendButton(ctx, j) {
  if (!j.gpu_milli || (j.state !== 'running' && j.state !== 'suspended')) return null;
  const suspended = j.state === 'suspended';
  const label = suspended ? 'Resume' : 'Suspend';
  return h('button', {
    type: 'button', class: 'btn', id: 'suspend-toggle',
    'aria-label': `${label} job ${j.id}`,
    title: suspended ? 'Let the job\'s held GPU launches go on' : 'Hold the job\'s GPU work; it keeps its memory and place',
    onclick: async (e) => {
      const btn = e.currentTarget;
      btn.disabled = true;
      try {
        const r = await (suspended ? api.resume(j.id) : api.suspend(j.id));
        ctx.store.jobs.set(r.id, r);
        flash(ctx.msg, suspended ? `Job ${j.id} resumed.` : `Job ${j.id} suspended: its new GPU launches wait${r.drained ? '.' : '; its queued GPU work is draining.'}`);
        render(ctx, r);
        // The button was rebuilt (Suspend <-> Resume): keep the keyboard on it.
        ctx.head.querySelector('#suspend-toggle')?.focus();
      } catch (err) { flash(ctx.msg, err.message, true); btn.disabled = false; }
      ctx.refresh();
    },
  }, label);
}

// Terminal: the job's own terminal (a job started with one) or a new shell in it (any other
// running job, a container job's included: crun exec), for its owner only (docs/terminal.md).
function terminalLink(ctx, j) {
  if (j.state !== 'running' || j.user !== ctx.store.me?.user || String(j.id).startsWith('slurm:')) return null;
  return h('a', {
    class: 'btn', id: 'terminal-open', href: `#/jobs/${j.id}/terminal`,
    title: j.tty ? 'Attach to the job\'s terminal' : 'Open a new shell inside the job',
  }, j.tty ? 'Terminal' : 'Terminal (new shell)');
}

// Its web services (docs/job-services.md): "Open NAME" for its owner and admins while it runs.
// A click asks for a ticket with the console's token and opens the service's URL in a new tab
// with no opener: the service lives at its own host name on tesseld's services listener
// (http://jID-NAME.DOMAIN:PORT/, an origin of its own) and its pages never reach this one, nor
// its token, nor another service.
function serviceLinks(ctx, j) {
  const me = ctx.store.me;
  if (j.state !== 'running' || !me || (j.user !== me.user && me.role !== 'admin') || !j.services?.length) return [];
  return j.services.filter((s) => s.url).map((s) => h('button', {
    type: 'button', class: 'btn', 'data-service': s.name, title: `Open ${s.name} (${s.url}) in a new tab`,
    onclick: async (e) => {
      const btn = e.currentTarget;
      btn.disabled = true;
      try {
        const t = await api.serviceTicket(j.id, s.name);
        window.open(t.url, '_blank', 'noopener,noreferrer');
      } catch (err) { flash(ctx.msg, err.message, true); }
      btn.disabled = false;
    },
  }, `Open ${s.name}`));
}

function dl(pairs) {
  return h('dl', { class: 'props' }, pairs.filter(Boolean).map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

function render(ctx, j) {
  if (!j) { clear(ctx.head, h('h1', {}, `Job ${ctx.id}`)); return; }
  const sig = JSON.stringify(j) + Math.floor(Date.now() / 1000);
  if (sig === ctx.sig) return;
  ctx.sig = sig;
  if (ctx.stopping && !ACTIVE.has(j.state)) { ctx.stopping = false; clear(ctx.msg); }
  const focusedCancel = document.activeElement?.closest?.('.confirm');
  const focusedSuspend = document.activeElement?.id === 'suspend-toggle';
  clear(ctx.head,
    h('h1', {}, `Job ${j.id}`, j.name ? h('span', { class: 'sub' }, ` · ${j.name}`) : null, ' ', stateBadge(j.state),
      j.simulated ? h('span', { class: 'badge sim' }, 'simulated GPU') : null),
    h('div', { class: 'headactions' },
      terminalLink(ctx, j),
      ...serviceLinks(ctx, j),
      suspendButton(ctx, j),
      ACTIVE.has(j.state) ? confirmButton('Cancel job', `Cancel job ${j.id}?`, `cancel-${j.id}`, async () => {
        try {
          const r = await api.cancel(j.id);
          if (r.state !== 'cancelled') { flash(ctx.msg, `Job ${j.id}: stopping (SIGTERM sent; SIGKILL if it is still running 10 s later).`); ctx.stopping = true; }
        } catch (e) { flash(ctx.msg, e.message, true); }
        ctx.refresh();
      }, 'btn danger') : null));
  if (focusedCancel) ctx.head.querySelector('.confirm button')?.focus();
  if (focusedSuspend) ctx.head.querySelector('#suspend-toggle')?.focus();
  const req = [jobGpu(j)];
  if (j.gpu_milli) req.push(`${bytes(j.gpu_mem)} GPU memory per GPU`);
  if (j.cpu) req.push(`${j.cpu} CPU`);
  if (j.mem) req.push(`${bytes(j.mem)} memory`);
  clear(ctx.props, dl([
    ['Command', h('code', {}, j.shell ? `/bin/sh -c ${command(j)}` : command(j))],
    ['State', [stateBadge(j.state), j.reason && !(j.state === 'pending' && j.reason_code) ? ` ${j.reason}` : '']],
    j.state === 'pending' && j.reason_code ? ['Why it waits', h('div', { class: 'wait', 'data-code': j.reason_code },
      h('strong', {}, j.reason_code), ' ', (j.reason || '').replace(`${j.reason_code}: `, ''),
      WAIT_ADVICE[j.reason_code] ? h('p', { class: 'reason' }, WAIT_ADVICE[j.reason_code]) : null)] : null,
    j.state === 'suspended' ? ['Suspended', [time(j.suspended_at), ' · ',
      h('span', { id: 'drain-state' }, j.drained ? 'drained: nothing of it runs on the GPU' : 'draining: its queued GPU work is finishing'),
      j.gpu_released ? [' · ', h('span', { id: 'gpu-released' }, `GPU memory given back: ${bytes(j.gpu_released)}`)] : null,
      j.suspended_for ? [' · ', h('span', { id: 'suspended-for' }, 'preempted: suspended to make room for ',
        h('a', { href: `#/jobs/${j.suspended_for}` }, `job ${j.suspended_for}`), ', resumed once its GPU has room again')] : null,
      j.suspended_reason === 'idle' ? [' · ', h('span', { id: 'reclaimed-idle' }, 'reclaimed while idle: its GPU memory was given back after it did no GPU work; its next CUDA call resumes it')] : null]] : null,
    ['User', j.user],
    ['Queue', h('a', { href: `#/jobs?queue=${encodeURIComponent(j.queue)}` }, j.queue)],
    ['Class · priority', `${j.class} · ${j.priority}`],
    j.preemptible ? ['Preemptible', j.preemptible] : null,
    j.idle_reclaim != null ? ['Idle reclaim', j.idle_reclaim ? `after ${j.idle_reclaim} s without GPU work` : 'never'] : null,
    ['Requested', req.join(', ')],
    ['Placed on', j.placement?.length ? j.placement.map((p) => `GPU ${p.gpu}: ${p.milli / 1000} GPU, ${bytes(p.mem)}`).join('; ') : '—'],
    ['Submitted', time(j.submitted_at)],
    ['Started', time(j.started_at)],
    ['Finished', time(j.finished_at)],
    ['Run time', duration(j)],
    j.exit_code !== null && j.exit_code !== undefined ? ['Exit code', String(j.exit_code)] : null,
    j.signal ? ['Signal', String(j.signal)] : null,
    j.cwd ? ['Working directory', h('code', {}, j.cwd)] : null,
  ]));
}
