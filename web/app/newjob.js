// newjob.js - the form that submits a job (POST /v1/jobs).  Validation is tesseld's: the form
// sends what was typed and shows the API's error beside the field it names, so the console
// and the CLI accept and refuse exactly the same things.

import { api } from './api.js';
import { h, splitArgs } from './util.js';
import { field, clearErrors, showError } from './widgets.js';

// API field -> the form's field that shows its error.
const ALIASES = { argv: 'command', shell: 'command', gpus: 'gpu' };

export function mount(ctx, store) {
  ctx.title = 'New job';
  const input = (attrs) => h('input', { type: 'text', autocomplete: 'off', ...attrs });
  const cmd = h('textarea', { rows: 2, spellcheck: 'false', placeholder: 'python train.py --epochs 10', required: true });
  const shell = h('input', { type: 'checkbox', id: 'f-shell', checked: true });
  const kindFrac = h('input', { type: 'radio', name: 'gpukind', id: 'gk-frac', value: 'frac', checked: true });
  const kindWhole = h('input', { type: 'radio', name: 'gpukind', id: 'gk-whole', value: 'whole' });
  const gpu = input({ inputmode: 'decimal', value: '0.5' });
  // Jobs go to leaf queues (a queue with sub-queues takes none).
  const leaves = store.queues.filter((q) => !q.children?.length);
  const queue = h('select', {}, (leaves.length ? leaves : [{ name: 'default' }]).map((q) => h('option', { value: q.name, selected: q.name === 'default' }, q.parent ? `${q.parent} › ${q.name}` : q.name)));
  const cls = h('select', {}, ['training', 'interactive', 'inference'].map((c) => h('option', { value: c }, c)));
  const form = h('form', { class: 'card form', novalidate: true, 'aria-labelledby': 'newjob-title' },
    h('p', { class: 'formerr error', role: 'alert', tabindex: -1 }),
    field('command', 'Command', cmd, 'What to run.'),
    h('div', { class: 'check' }, shell, h('label', { for: 'f-shell' }, 'Run through /bin/sh (pipes, redirections, $VARIABLES)')),
    field('name', 'Name (optional)', input({ placeholder: 'train-resnet' })),
    h('fieldset', { class: 'row' },
      h('legend', {}, 'GPU'),
      h('div', { class: 'radios', role: 'radiogroup', 'aria-label': 'GPU request kind' },
        h('span', {}, kindFrac, h('label', { for: 'gk-frac' }, 'Fraction of one GPU')),
        h('span', {}, kindWhole, h('label', { for: 'gk-whole' }, 'Whole GPUs'))),
      field('gpu', 'GPUs', gpu, 'A fraction such as 0.5 (0 for none), or a count of whole GPUs.'),
      field('gpu_mem', 'GPU memory', input({ placeholder: 'e.g. 8G' }), 'Limit per GPU; empty: the GPU\'s memory × the fraction.')),
    h('fieldset', { class: 'row' },
      h('legend', {}, 'CPU and memory'),
      field('cpu', 'CPU cores', input({ inputmode: 'decimal', placeholder: 'no limit' })),
      field('mem', 'Memory', input({ placeholder: 'e.g. 16G (no limit)' }))),
    h('fieldset', { class: 'row' },
      h('legend', {}, 'Scheduling'),
      field('queue', 'Queue', queue),
      field('class', 'Class', cls, 'Only training jobs may run beyond the queue\'s guarantee, and be preempted.'),
      field('priority', 'Priority', input({ inputmode: 'numeric', value: '0' }), '−1000 … 1000; higher runs first within its class in the queue.')),
    h('details', {},
      h('summary', {}, 'More options'),
      field('cwd', 'Working directory', input({ placeholder: 'absolute path (default: the job\'s own directory)' })),
      field('env', 'Environment', h('textarea', { rows: 3, spellcheck: 'false', placeholder: 'KEY=value, one per line' }))),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn primary' }, 'Submit job'),
      h('a', { class: 'btn', href: '#/jobs' }, 'Cancel')));
  const syncKind = () => {
    const whole = kindWhole.checked;
    form.querySelector('label[for="f-gpu"]').textContent = whole ? 'Number of GPUs' : 'Fraction of a GPU';
    if (whole && /^0?\.\d+$|^0$/.test(gpu.value.trim())) gpu.value = '1';
  };
  kindFrac.addEventListener('change', syncKind);
  kindWhole.addEventListener('change', syncKind);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const spec = build(form, shell.checked, kindWhole.checked);
    if (spec.error) return showError(form, spec.error);
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const job = await api.submit(spec);
      store.jobs.set(job.id, job);
      ctx.refresh();
      ctx.navigate(`#/jobs/${job.id}`);
    } catch (e) {
      showError(form, e, ALIASES);
    } finally {
      button.disabled = false;
    }
  });
  ctx.root.append(h('h1', { id: 'newjob-title' }, 'New job'), form);
  syncKind();
}

// The form -> the request body.  Only what the person filled in is sent (the API has the
// defaults).  Numbers typed as numbers are sent as JSON numbers; anything else is sent as typed
// for tesseld to judge, except what cannot be put into JSON at all (an open quote).
function build(form, shell, whole) {
  const v = (n) => form.elements[n].value.trim();
  const num = (s) => (s !== '' && !isNaN(Number(s)) ? Number(s) : s);
  const spec = {};
  const cmd = v('command');
  if (shell) spec.argv = cmd ? [cmd] : [];
  else {
    const argv = splitArgs(cmd);
    if (!argv) return { error: { field: 'command', message: 'a quote is not closed' } };
    spec.argv = argv;
  }
  if (shell) spec.shell = true;
  if (v('name')) spec.name = v('name');
  const g = v('gpu');
  if (g !== '' && !(g === '0' && !whole)) {
    if (whole) spec.gpus = num(g); else spec.gpu = num(g);
  }
  // Sizes as typed: tesseld reads "8G" and refuses a bare "8" (8 bytes is never meant).
  if (v('gpu_mem')) spec.gpu_mem = v('gpu_mem');
  if (v('cpu')) spec.cpu = num(v('cpu'));
  if (v('mem')) spec.mem = v('mem');
  spec.queue = v('queue');
  spec.class = v('class');
  if (v('priority') !== '') spec.priority = num(v('priority'));
  if (v('cwd')) spec.cwd = v('cwd');
  const env = form.elements.env.value.split('\n').map((l) => l.trim()).filter(Boolean);
  if (env.length) {
    spec.env = {};
    for (const line of env) {
      const eq = line.indexOf('=');
      if (eq <= 0) return { error: { field: 'env', message: `"${line}" is not KEY=value` } };
      spec.env[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  return spec;
}
