// The account pages: first-run setup, sign-in and sign-up, and the settings of a signed-in account (API keys,
// connected applications, password), which carry the app's header and their own tabs below it. Fields, CSRF
// inputs and form errors come from web/forms.ts; every value from a user goes through ghtml's escaping
// `${…}`; `!${…}` only inserts fragments made here.
import { html } from 'ghtml'
import { SCOPES, type Scope } from '../../platform/auth/scopes.ts'
import { timeZoneInput, untilWhen, zoneWords } from '../../platform/web/chosen-days.ts'
import { formatDate } from '../../platform/web/format.ts'
import { csrfInput, type FormState, field, formError, notice } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { FailedSignIn } from './accounts.repository.ts'
import { MIN_PASSWORD_LENGTH } from './accounts.service.ts'
import type { ApiKey } from './api-keys.repository.ts'
import { RESET_EMAIL_INTERVAL_MS, RESET_LINK_LIFETIME_MS } from './password-reset.service.ts'

export const ACCOUNT_PATHS = {
  home: '/account',
  signIn: '/account/sign-in',
  signUp: '/account/sign-up',
  signOut: '/account/sign-out',
  signOutEverywhere: '/account/sign-out-everywhere',
  setup: '/account/setup',
  keys: '/account/keys',
  newKey: '/account/keys/new',
  revokeKey: (id: string) => `/account/keys/${id}/revoke`,
  apps: '/account/apps',
  webhooks: '/account/webhooks',
  revokeApp: (grantId: string) => `/account/apps/${grantId}/revoke`,
  password: '/account/password',
  /** The account's audit log (audit/), read by its owner. */
  activity: '/account/activity',
  forgotPassword: '/account/forgot-password',
  resetPassword: '/account/reset-password',
  /** Single sign-on (sso/): the button's form starts a sign-in at the provider, which comes back to the callback. */
  ssoStart: '/account/sso/start',
  ssoCallback: '/account/sso/callback',
} as const

/** The sign-in page's query that opens the admins' password form when SSO_ONLY hides it (the break-glass). */
export const PASSWORD_VIEW = { name: 'with', value: 'password' } as const

/** Single sign-on as the sign-in and sign-up pages offer it: the provider's name, and whether it is the only way. */
export interface SsoOffer {
  name: string
  /** SSO_ONLY: no password form, but the admins' one behind a link. */
  only: boolean
}

/**
 * The button that starts a sign-in at the provider: a form with its CSRF token, so no other site can start one.
 * The page's main button when it is the only way in; beside a password form, that form's button is.
 */
function ssoButton(csrfToken: string, returnTo: string, sso: SsoOffer): string {
  return html`<form method="post" action="${ACCOUNT_PATHS.ssoStart}" class="sso-form">
!${csrfInput(csrfToken)}
<input type="hidden" name="return_to" value="${returnTo}">
<button class="button${sso.only ? ' primary' : ''} sso-button" type="submit">Sign in with ${sso.name}</button>
</form>`
}

/** Between the provider's button and the password form. */
const ssoOr = (words: string) => html`<p class="sso-or"><span>${words}</span></p>`

/** A form of a signed-out visitor: its CSRF token, and what was typed and refused when shown again. */
export interface SignedOutForm extends FormState {
  csrfToken: string
}

const passwordHint = `At least ${MIN_PASSWORD_LENGTH} characters.`

/** A page with one narrow card: the forms of a signed-out visitor. */
function formCard(title: string, intro: string, body: string): string {
  return html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">${title}</h1>
<p class="muted">${intro}</p>
!${body}
</div></section>`
}

export function signInPage(
  state: SignedOutForm & {
    returnTo: string
    signUpOpen: boolean
    canResetPassword: boolean
    notice?: string
    /** Single sign-on, when a provider is set. */
    sso?: SsoOffer
    /** SSO_ONLY's password form for admins (the break-glass), opened by PASSWORD_VIEW. */
    adminPassword?: boolean
  },
): Page {
  const { sso } = state
  const query = (extra: string) =>
    `?${extra}${extra ? '&' : ''}return_to=${encodeURIComponent(state.returnTo)}`
  const passwordForm = html`<form method="post" action="${ACCOUNT_PATHS.signIn}" novalidate>
!${csrfInput(state.csrfToken)}
<input type="hidden" name="return_to" value="${state.returnTo}">
!${state.adminPassword ? html`<input type="hidden" name="${PASSWORD_VIEW.name}" value="${PASSWORD_VIEW.value}">` : ''}
!${formError(state)}
!${field(state, { name: 'email', label: 'Email', type: 'email', autocomplete: 'username', maxLength: 254 })}
!${field(state, { name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password' })}
<div class="actions"><button class="button primary" type="submit">Sign in</button></div>
</form>`
  const forgot = state.canResetPassword
    ? html`<p class="muted"><a href="${ACCOUNT_PATHS.forgotPassword}">Forgot your password?</a></p>`
    : ''
  const signUp = state.signUpOpen
    ? html`<p class="muted">No account yet? <a href="${ACCOUNT_PATHS.signUp}${query('')}">Create one</a>.</p>`
    : ''
  if (sso?.only && state.adminPassword) {
    const body = html`!${notice(state.notice)}
!${passwordForm}
!${forgot}
<p class="muted"><a href="${ACCOUNT_PATHS.signIn}${query('')}">Back to sign in with ${sso.name}</a></p>`
    return {
      title: 'Admin sign-in · Coffer',
      main: formCard(
        'Admin sign-in',
        `This server signs in with ${sso.name}. Its admins keep a password, set with the admin command, for when ${sso.name} cannot be used.`,
        body,
      ),
    }
  }
  if (sso?.only) {
    const body = html`!${notice(state.notice)}
!${formError(state)}
!${ssoButton(state.csrfToken, state.returnTo, sso)}
!${signUp}
<p class="muted sso-admin"><a href="${ACCOUNT_PATHS.signIn}${query(`${PASSWORD_VIEW.name}=${PASSWORD_VIEW.value}`)}">Admin sign-in with a password</a></p>`
    return {
      title: 'Sign in · Coffer',
      main: formCard('Sign in', `Sign in to your Coffer account with ${sso.name}.`, body),
    }
  }
  const body = html`!${notice(state.notice)}
!${sso ? html`!${ssoButton(state.csrfToken, state.returnTo, sso)}!${ssoOr('or with your password')}` : ''}
!${passwordForm}
!${forgot}
!${signUp}`
  return { title: 'Sign in · Coffer', main: formCard('Sign in', 'Sign in to your Coffer account.', body) }
}

/** "Forgot your password?": the address to send a link to; once sent, the same answer for any address. */
export function forgotPasswordPage(state: SignedOutForm & { sentTo?: string }): Page {
  const body =
    state.sentTo === undefined
      ? html`<form method="post" action="${ACCOUNT_PATHS.forgotPassword}" novalidate>
!${csrfInput(state.csrfToken)}
!${formError(state)}
!${field(state, { name: 'email', label: 'Email', type: 'email', autocomplete: 'username', maxLength: 254 })}
<div class="actions"><button class="button primary" type="submit">Send me a link</button></div>
</form>
<p class="muted"><a href="${ACCOUNT_PATHS.signIn}">Back to sign in</a></p>`
      : html`!${notice(`If ${state.sentTo} is the address of an account here, a link to choose a new password is on its way. It works for ${RESET_LINK_LIFETIME_MS / 60_000} minutes, once.`)}
<p class="muted">One link is sent at most every ${RESET_EMAIL_INTERVAL_MS / 60_000} minutes: if you asked a moment ago, use the one in that email. Nothing after a few minutes? Look in the spam folder, or <a href="${ACCOUNT_PATHS.forgotPassword}">ask again</a>.</p>`
  return {
    title: 'Forgot your password? · Coffer',
    main: formCard(
      'Forgot your password?',
      'Give the email address of your account, and we will send it a link to choose a new password.',
      body,
    ),
  }
}

/** The page a reset link opens: a new password, or word that the link no longer works. */
export function resetPasswordPage(state: SignedOutForm & { action: string; valid: boolean }): Page {
  const body = state.valid
    ? html`<form method="post" action="${state.action}" novalidate>
!${csrfInput(state.csrfToken)}
!${formError(state)}
!${field(state, { name: 'password', label: 'New password', type: 'password', autocomplete: 'new-password', hint: passwordHint })}
!${field(state, { name: 'confirm', label: 'New password again', type: 'password', autocomplete: 'new-password' })}
<div class="actions"><button class="button primary" type="submit">Set the new password</button></div>
</form>`
    : html`<p>This link was used, has expired, or is not right. <a href="${ACCOUNT_PATHS.forgotPassword}">Ask for a new one</a>.</p>`
  return {
    title: 'Choose a new password · Coffer',
    main: formCard(
      'Choose a new password',
      'Every session of the account ends: sign in again with the new password.',
      body,
    ),
  }
}

function newAccountForm(state: SignedOutForm, action: string, submit: string, returnTo?: string): string {
  return html`<form method="post" action="${action}" novalidate>
!${csrfInput(state.csrfToken)}
!${returnTo === undefined ? '' : html`<input type="hidden" name="return_to" value="${returnTo}">`}
!${formError(state)}
!${field(state, { name: 'email', label: 'Email', type: 'email', autocomplete: 'username', maxLength: 254 })}
!${field(state, { name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password', hint: passwordHint })}
!${field(state, { name: 'confirm', label: 'Password again', type: 'password', autocomplete: 'new-password' })}
<div class="actions"><button class="button primary" type="submit">${submit}</button></div>
</form>`
}

/** The first-run page, behind the one-time link the server printed at start. */
export function setupPage(state: SignedOutForm & { action: string }): Page {
  return {
    title: 'Set up Coffer',
    main: formCard(
      'Welcome to Coffer',
      'Create the first account of this server. This link works once; later accounts come from the command line, or from the sign-up page when it is open.',
      newAccountForm(state, state.action, 'Create account'),
    ),
  }
}

export function signUpPage(state: SignedOutForm & { returnTo: string; sso?: SsoOffer }): Page {
  const { sso } = state
  const intro = sso
    ? `Your files stay on this server. Sign in with ${sso.name}, and an account is made for your address there${sso.only ? '' : ', or choose a password here'}.`
    : 'Your files stay on this server.'
  const body = sso?.only
    ? ssoButton(state.csrfToken, state.returnTo, sso)
    : html`!${sso ? html`!${ssoButton(state.csrfToken, state.returnTo, sso)}!${ssoOr('or choose a password')}` : ''}
!${newAccountForm(state, ACCOUNT_PATHS.signUp, 'Create account', state.returnTo)}`
  return {
    title: 'Create an account · Coffer',
    main: formCard('Create an account', intro, body),
  }
}

/** The account settings' tabs. */
export type SettingsSection = 'keys' | 'apps' | 'webhooks' | 'password' | 'activity'

/**
 * A settings page: the app's header (with the account menu, which signs out), the account's email, the
 * settings' tabs, then the page's card.
 */
export function settingsPage(nav: AppNav, current: SettingsSection, title: string, body: string): Page {
  const link = (section: SettingsSection, href: string, label: string) =>
    html`<li><a href="${href}"!${section === current ? html` aria-current="page"` : ''}>${label}</a></li>`
  const main = html`<div class="settings">
<div class="settings-head"><div><p class="eyebrow">Account</p><p class="account-email">${nav.email}</p></div></div>
<nav class="tabs" aria-label="Account settings"><ul>
!${link('keys', ACCOUNT_PATHS.keys, 'API keys')}
!${link('apps', ACCOUNT_PATHS.apps, 'Connected apps')}
!${link('webhooks', ACCOUNT_PATHS.webhooks, 'Webhooks')}
!${link('password', ACCOUNT_PATHS.password, 'Password and sessions')}
!${link('activity', ACCOUNT_PATHS.activity, 'Activity')}
</ul></nav>
<section class="card" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">${title}</h1>
!${body}
</div></section>
</div>`
  return { title: `${title} · Coffer`, main, nav }
}

/** A time for people (the browser shows it in their own zone), or `never` when there is none. */
export function when(ms: number | null, never: string): string {
  if (ms === null) return html`<span class="muted">${never}</span>`
  const iso = new Date(ms).toISOString()
  return html`<time datetime="${iso}" data-local>${formatDate(ms)}</time>`
}

/** The scopes of a key or a connected application, as tags. */
export function scopeList(scopes: readonly Scope[]): string {
  return html`<ul class="scope-tags">!${scopes.map((s) => html`<li><code>${s}</code></li>`)}</ul>`
}

function keyRow(key: ApiKey, csrfToken: string, now: number, timeZone: string): string {
  const expired = key.expiresAt !== null && key.expiresAt <= now
  const state = key.revokedAt !== null ? 'Revoked' : expired ? 'Expired' : undefined
  return html`<li class="item${state ? ' is-inactive' : ''}">
<div class="item-main">
<p class="item-title">${key.name}!${state ? html` <span class="badge">${state}</span>` : ''}</p>
<p class="item-meta"><code>${key.prefix}…</code></p>
!${scopeList(key.scopes)}
<dl class="item-dates">
<div><dt>Created</dt><dd>!${when(key.createdAt, '')}</dd></div>
<div><dt>Last used</dt><dd>!${when(key.lastUsedAt, 'Never')}</dd></div>
<div><dt>Works until</dt><dd>!${key.expiresAt === null ? html`<span class="muted">No end</span>` : untilWhen(key.expiresAt, timeZone)}</dd></div>
</dl>
</div>
!${
    state
      ? ''
      : html`<form method="post" action="${ACCOUNT_PATHS.revokeKey(key.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button danger" type="submit" aria-label="Revoke ${key.name}">Revoke</button></form>`
  }
</li>`
}

/**
 * Every scope as a checkbox with what it allows. Ticked: `files:read` at first; what was sent when the form
 * is shown again (the form reader joins a list with ", ", which no scope contains). A refusal marks each box
 * and names the message.
 */
function scopeCheckboxes(state: FormState): string {
  const checked = new Set(state.values ? (state.values.scopes ?? '').split(', ') : ['files:read'])
  const error = state.errors?.scopes
  const invalid = error ? html` aria-invalid="true" aria-describedby="field-scopes-error"` : ''
  return html`<fieldset class="field">
<legend>Scopes</legend>
<ul class="checks">!${(Object.keys(SCOPES) as Scope[]).map(
    (
      scope,
    ) => html`<li><label class="check"><input type="checkbox" name="scopes" value="${scope}"!${checked.has(scope) ? ' checked' : ''}!${invalid}>
<span><code>${scope}</code><span class="check-text">${SCOPES[scope]}</span></span></label></li>`,
  )}</ul>
!${error ? html`<p class="field-error" id="field-scopes-error">${error}</p>` : ''}
</fieldset>`
}

export function keysPage(data: {
  nav: AppNav
  keys: ApiKey[]
  /** The key just made, whose secret is shown this once. */
  created?: { key: ApiKey; secret: string }
  /** The new key's form, shown again with what was wrong. */
  form?: FormState
  /** The reader's time zone, the one the key's day is shown and chosen in (web/chosen-days.ts). */
  timeZone: string
}): Page {
  const { nav, keys, created } = data
  const form = data.form ?? {}
  const now = Date.now()
  const shown = created
    ? html`<div class="secret-box" role="status" tabindex="-1" id="new-key">
<h2>Your new key “${created.key.name}”</h2>
<p>Copy it now: it will not be shown again. Anyone with it can act on your files within its scopes.</p>
<div class="secret-row"><code class="secret" id="new-key-secret">${created.secret}</code>
<button class="button" type="button" data-copy="${created.secret}" data-copy-done="Key copied to the clipboard." hidden>Copy key</button></div>
<p class="toast" data-copy-status aria-live="polite"></p>
</div>`
    : ''
  const list =
    keys.length === 0
      ? html`<p class="muted">No API keys yet.</p>`
      : html`<ul class="items" aria-label="Your API keys">!${keys.map((k) => keyRow(k, nav.csrfToken, now, data.timeZone))}</ul>`
  const body = html`!${shown}
<p class="muted">Keys let scripts and tools use the API as you. Send one as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
<h2>Your keys</h2>
!${list}
<h2 id="new-key-title">Create a key</h2>
<form method="post" action="${ACCOUNT_PATHS.newKey}" novalidate aria-labelledby="new-key-title">
!${csrfInput(nav.csrfToken)}
!${timeZoneInput(data.timeZone)}
!${formError(form)}
!${field(form, { name: 'name', label: 'Name', hint: 'What the key is for, such as "backup script".', maxLength: 100 })}
!${scopeCheckboxes(form)}
!${field(form, { name: 'expires', label: 'Works until', type: 'date', hint: `The key stops working at the end of this day, ${zoneWords(data.timeZone)}. Leave empty for a key that never expires.`, required: false })}
<div class="actions"><button class="button primary" type="submit">Create key</button></div>
</form>`
  return settingsPage(nav, 'keys', 'API keys', body)
}

/** The latest wrong passwords given for this account: when, and from which address. */
function failedSignIns(failures: FailedSignIn[]): string {
  if (failures.length === 0) {
    return html`<p class="muted">No wrong password was given for your account in the last 30 days.</p>`
  }
  return html`<p class="muted">The latest wrong passwords given for your account in the last 30 days. Not yours? Choose a new password above.</p>
<ul class="item-list failed-sign-ins">!${failures.map(
    (failure) =>
      html`<li>!${when(failure.at, '')} <span class="muted">from</span> <code>${addressOf(failure.client)}</code></li>`,
  )}</ul>`
}

/** The address of a rate-limit bucket (`ip:203.0.113.9`, `ip6:2001:db8::/64`), as a person reads it. */
const addressOf = (client: string) => client.replace(/^ip6?:/, '')

export function passwordPage(data: {
  nav: AppNav
  failedSignIns: FailedSignIn[]
  form?: FormState
  notice?: string
}): Page {
  const { nav } = data
  const form = data.form ?? {}
  const body = html`!${notice(data.notice)}
<h2>Change password</h2>
<p class="muted">Changing it signs you out everywhere else.</p>
<form method="post" action="${ACCOUNT_PATHS.password}" novalidate>
!${csrfInput(nav.csrfToken)}
!${formError(form)}
!${field(form, { name: 'current', label: 'Current password', type: 'password', autocomplete: 'current-password' })}
!${field(form, { name: 'password', label: 'New password', type: 'password', autocomplete: 'new-password', hint: passwordHint })}
!${field(form, { name: 'confirm', label: 'New password again', type: 'password', autocomplete: 'new-password' })}
<div class="actions"><button class="button primary" type="submit">Change password</button></div>
</form>
<h2>Sessions</h2>
<p class="muted">Signed in on a computer you no longer use? Sign out of every browser, this one included.</p>
<form method="post" action="${ACCOUNT_PATHS.signOutEverywhere}" class="inline-form">!${csrfInput(nav.csrfToken)}<button class="button danger" type="submit">Sign out everywhere</button></form>
<h2>Failed sign-ins</h2>
!${failedSignIns(data.failedSignIns)}`
  return settingsPage(nav, 'password', 'Password and sessions', body)
}
