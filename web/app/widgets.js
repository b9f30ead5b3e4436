// widgets.js - small pieces the pages share: a button that asks before it acts, keeping the
// keyboard focus across a re-render, messages, and form fields that show the API's errors
// beside them (aria-invalid + aria-describedby).

import { h, clear } from './util.js';

// Buttons waiting for their confirmation survive the table being rebuilt by the next poll.
const armed = new Set();

// [label] -> click -> [Yes, label] [No] ; key names it across re-renders.
export function confirmButton(label, question, key, action, cls = 'btn small danger') {
  const box = h('span', { class: 'confirm', 'data-key': key });
  const idle = () => {
    armed.delete(key);
    clear(box, h('button', { type: 'button', class: cls, 'data-key': key, 'aria-label': question.replace(/\?$/, ''),
      onclick: () => { armed.add(key); ask(); box.querySelector('button').focus(); } }, label));
  };
  const ask = () => clear(box,
    h('span', { class: 'q' }, question, ' '),
    h('button', { type: 'button', class: cls, 'data-key': key + ':yes', onclick: async (e) => {
      e.currentTarget.disabled = true; armed.delete(key); await action(); idle();
    } }, `Yes, ${label.toLowerCase()}`),
    h('button', { type: 'button', class: 'btn small', 'data-key': key + ':no', onclick: () => { idle(); box.querySelector('button').focus(); } }, 'No'));
  if (armed.has(key)) ask(); else idle();
  return box;
}

// Run fn (which rebuilds part of container); give the focus back to the element with the same
// data-key, if it had it.
export function keepFocus(container, fn) {
  const a = document.activeElement;
  const key = a && container.contains(a) ? a.getAttribute('data-key') || a.getAttribute('href') : null;
  fn();
  if (key) {
    const el = container.querySelector(`[data-key="${CSS.escape(key)}"]`) || container.querySelector(`[href="${CSS.escape(key)}"]`);
    el?.focus();
  }
}

// A message in el (role=alert or status set by the caller); errors styled as such.
export function flash(el, text, error = false) {
  clear(el, h('p', { class: error ? 'msg error' : 'msg ok' }, text));
}

// field('gpu_mem', 'GPU memory', input, 'help text') -> a labelled field with a place for the
// API's error about it.  The input gets id f-NAME.
// prefix keeps ids unique when two forms on a page have a field of the same name.
export function field(name, label, input, help, prefix = 'f') {
  input.id = input.id || `${prefix}-${name}`;
  input.name = input.name || name;
  const helpId = `${prefix}-help-${name}`, errId = `${prefix}-err-${name}`;
  input.setAttribute('aria-describedby', `${help ? helpId + ' ' : ''}${errId}`);
  return h('div', { class: 'field', 'data-field': name },
    h('label', { for: input.id }, label),
    input,
    help ? h('p', { class: 'help', id: helpId }, help) : null,
    h('p', { class: 'fielderr', id: errId, 'aria-live': 'polite' }));
}

export function clearErrors(form) {
  for (const el of form.querySelectorAll('.fielderr')) el.textContent = '';
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  for (const el of form.querySelectorAll('.field.invalid')) el.classList.remove('invalid');
  const top = form.querySelector('.formerr');
  if (top) top.textContent = '';
}

// Show an API error: beside its field when the form has one for it (aliases maps API field
// names to the form's, e.g. gpus -> gpu), else at the form's top.  Focuses the field.
export function showError(form, err, aliases = {}) {
  const name = err.field ? aliases[err.field] || err.field : null;
  const f = name ? form.querySelector(`.field[data-field="${CSS.escape(name)}"]`) : null;
  if (f) {
    f.classList.add('invalid');
    f.querySelector('.fielderr').textContent = err.message;
    const input = f.querySelector('input, select, textarea');
    input?.setAttribute('aria-invalid', 'true');
    input?.focus();
  } else {
    const top = form.querySelector('.formerr');
    top.textContent = err.message;
    top.focus?.();
  }
}
