import { ApiError } from '../ui/api.js';
import { h } from '../ui/dom.js';
import type { Page } from '../ui/page.js';

// The pairing token is exchanged once for an HttpOnly session cookie; the page never stores the token.

export const loginPage: Page = (ctx) => {
  document.title = 'Log in · mnn-edge';
  const input = h('input', {
    type: 'password',
    name: 'token',
    autocomplete: 'current-password',
    required: true,
    'aria-label': 'Pairing token',
    'data-testid': 'token',
  });
  const error = h('p', { class: 'form-error', role: 'alert', 'data-testid': 'login-error' });
  const button = h('button', { type: 'submit', 'data-testid': 'login' }, 'Log in');
  const form = h(
    'form',
    { class: 'login card' },
    h('h1', {}, 'mnn-edge'),
    h('p', {}, 'Enter the pairing token. Print it on the device with ', h('code', {}, 'mnn-edge token'), '.'),
    // Password managers (and Chromium's form checks) expect a user name next to a password field.
    h('input', { type: 'text', name: 'username', value: 'mnn-edge', autocomplete: 'username', hidden: true }),
    input,
    button,
    error,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    button.disabled = true;
    try {
      await ctx.api.send('POST', '/api/login', { token: input.value.trim() });
      ctx.navigate('overview');
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.message : String(err);
    } finally {
      button.disabled = false;
    }
  });
  queueMicrotask(() => input.focus());
  return { element: h('div', { class: 'login-wrap' }, form) };
};
