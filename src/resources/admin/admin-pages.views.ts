// The admin's pages (routes in admin-pages.routes.ts): the server's accounts, searched and paged, an account with
// what an admin can do to it, and the invitations with the form that makes one. Every value from a user goes
// through ghtml's escaping `${…}`; `!${…}` only inserts fragments made here.
import { html } from 'ghtml'
import { formatSize } from '../../platform/format-size.shared.ts'
import { formatCount, formatDate, formatDateTime } from '../../platform/web/format.ts'
import { csrfInput, type FormState, field, formError, notice, select } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { Invitation } from '../accounts/invitations.repository.ts'
import type { Usage } from '../quotas/quotas.service.ts'
import type { ManagedAccount } from './admin.repository.ts'

export const ADMIN_PATHS = {
  accounts: '/admin/accounts',
  account: (id: string) => `/admin/accounts/${id}`,
  accountAction: (
    id: string,
    action: 'role' | 'quota' | 'disable' | 'enable' | 'password-reset' | 'delete',
  ) => `/admin/accounts/${id}/${action}`,
  invitations: '/admin/invitations',
  audit: '/admin/audit',
  auditExport: '/admin/audit/export',
  revokeInvitation: (id: string) => `/admin/invitations/${id}/revoke`,
} as const

const ROLE_CHOICES = [
  { value: 'member', label: 'Member' },
  { value: 'admin', label: 'Admin: manages the accounts of this server' },
] as const

type AdminSection = 'accounts' | 'invitations' | 'audit'

/** An admin page: the app's header, the admin's tabs, then the page's card. */
export function adminPage(nav: AppNav, current: AdminSection, title: string, body: string): Page {
  const link = (section: AdminSection, href: string, label: string) =>
    html`<li><a href="${href}"!${section === current ? html` aria-current="page"` : ''}>${label}</a></li>`
  const main = html`<div class="settings">
<div class="settings-head"><div><p class="eyebrow">Admin</p><p class="account-email">This server’s accounts</p></div></div>
<nav class="tabs" aria-label="Admin"><ul>
!${link('accounts', ADMIN_PATHS.accounts, 'Accounts')}
!${link('invitations', ADMIN_PATHS.invitations, 'Invitations')}
!${link('audit', ADMIN_PATHS.audit, 'Audit log')}
</ul></nav>
<section class="card" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">${title}</h1>
!${body}
</div></section>
</div>`
  return { title: `${title} · Admin · Coffer`, main, nav }
}

function time(ms: number | null, never: string): string {
  if (ms === null) return html`<span class="muted">${never}</span>`
  return html`<time datetime="${new Date(ms).toISOString()}" data-local>${formatDateTime(ms)}</time>`
}

function badges(account: ManagedAccount): string {
  const state =
    account.deletingAt !== null
      ? html` <span class="badge badge-warn">Being deleted</span>`
      : account.disabledAt !== null
        ? html` <span class="badge badge-warn">Disabled</span>`
        : ''
  return html`!${account.role === 'admin' ? html` <span class="badge badge-on">Admin</span>` : ''}!${state}`
}

/** What the account stores against its quota, in words: "12 files, 3.4 GB of 10 GB". */
export function storedWords(usage: Usage | undefined): string {
  if (!usage) return ''
  const files = `${formatCount(usage.files)} file${usage.files === 1 ? '' : 's'}`
  const quota = usage.quotaBytes === null ? ', no quota' : ` of ${formatSize(usage.quotaBytes)}`
  return `${files}, ${formatSize(usage.bytes)}${quota}`
}

function accountRow(account: ManagedAccount, usage: Usage | undefined): string {
  const full = usage && usage.quotaBytes !== null && usage.bytes >= usage.quotaBytes
  return html`<li class="item${account.disabledAt !== null ? ' is-inactive' : ''}">
<div class="item-main">
<p class="item-title"><a href="${ADMIN_PATHS.account(account.id)}"><bdi>${account.email}</bdi></a>!${badges(account)}!${full ? html` <span class="badge badge-warn">Full</span>` : ''}</p>
<p class="item-meta">${storedWords(usage)} &#183; joined <time datetime="${new Date(account.createdAt).toISOString()}">${formatDate(account.createdAt)}</time> &#183; last signed in !${time(account.lastSignInAt, 'never')}</p>
</div>
</li>`
}

export function accountsPage(data: {
  nav: AppNav
  accounts: ManagedAccount[]
  usage: Map<string, Usage>
  search: string
  /** The address of the next page; none on the last. */
  nextHref: string | null
  /** Whether this is a later page. */
  later: boolean
  notice?: string
}): Page {
  const { accounts, search } = data
  const empty = search
    ? html`<p class="muted">No account’s email holds “${search}”.</p>`
    : html`<p class="muted">No accounts.</p>`
  const pager =
    data.nextHref || data.later
      ? html`<nav class="pager" aria-label="Pages of accounts">!${data.later ? html`<a class="button" href="${search ? `${ADMIN_PATHS.accounts}?q=${encodeURIComponent(search)}` : ADMIN_PATHS.accounts}">Newest</a>` : ''}!${data.nextHref ? html`<a class="button" href="${data.nextHref}" rel="next">More accounts</a>` : ''}</nav>`
      : ''
  const body = html`!${notice(data.notice)}
<form class="search admin-search" method="get" action="${ADMIN_PATHS.accounts}" role="search">
<label class="sr-only" for="account-search">Search accounts by email</label>
<input id="account-search" type="search" name="q" value="${search}" placeholder="Search by email" maxlength="254" autocomplete="off">
<button class="button" type="submit">Search</button>
</form>
!${accounts.length === 0 ? empty : html`<ul class="items" aria-label="Accounts, newest first">!${accounts.map((account) => accountRow(account, data.usage.get(account.id)))}</ul>`}
!${pager}
<p class="muted">New people join by an <a href="${ADMIN_PATHS.invitations}">invitation</a>.</p>`
  return adminPage(data.nav, 'accounts', 'Accounts', body)
}

export function accountPage(data: {
  nav: AppNav
  account: ManagedAccount
  usage: Usage
  /** DEFAULT_QUOTA_BYTES; null: unlimited. */
  defaultQuotaBytes: number | null
  /** The account of the admin looking: they do not disable themselves here. */
  self: boolean
  sendsEmail: boolean
  form?: FormState
  notice?: string
}): Page {
  const { account, nav } = data
  if (account.deletingAt !== null) return beingDeletedPage(nav, account)
  const token = csrfInput(nav.csrfToken)
  const disabled = account.disabledAt !== null
  const state = disabled
    ? html`Disabled since !${time(account.disabledAt, '')}: it cannot sign in, its keys and sessions were ended, and its links and request pages answer as if they did not exist.`
    : html`Active.`
  const toggle = data.self
    ? html`<p class="muted">This is your account: another admin can disable it.</p>`
    : disabled
      ? html`<form method="post" action="${ADMIN_PATHS.accountAction(account.id, 'enable')}">!${token}<div class="actions"><button class="button" type="submit">Enable account</button></div></form>
<p class="hint">It signs in again with its password; its ended keys and sessions stay ended.</p>`
      : html`<form method="post" action="${ADMIN_PATHS.accountAction(account.id, 'disable')}">!${token}<div class="actions"><button class="button danger" type="submit">Disable account</button></div></form>
<p class="hint">At once, on every server process: it cannot sign in, its sessions end, its API keys and OAuth tokens stop working, and its links and request pages answer as if they did not exist. Its files stay.</p>`
  const reset = data.sendsEmail
    ? html`<h2>Password</h2>
<form method="post" action="${ADMIN_PATHS.accountAction(account.id, 'password-reset')}">!${token}<div class="actions"><button class="button" type="submit"!${disabled ? ' disabled' : ''}>Email a password-reset link</button></div></form>
<p class="hint">The link works once, for an hour, as “Forgot your password?” sends it.</p>`
    : html`<h2>Password</h2><p class="muted">This server sends no email. Set a password with the admin command: <code>npm run cli -- accounts set-password --email ${account.email} --password-stdin</code>.</p>`
  const body = html`!${notice(data.notice)}
!${formError(data.form)}
<p class="muted"><a href="${ADMIN_PATHS.accounts}">All accounts</a></p>
<dl class="details">
<div><dt>Email</dt><dd><bdi>${account.email}</bdi>!${badges(account)}</dd></div>
<div><dt>Joined</dt><dd>!${time(account.createdAt, '')}</dd></div>
<div><dt>Last signed in</dt><dd>!${time(account.lastSignInAt, 'Never')}</dd></div>
<div><dt>Password</dt><dd>${account.hasPassword ? 'Set' : 'None (API keys or single sign-on only)'}</dd></div>
<div><dt>State</dt><dd>!${state}</dd></div>
<div><dt>Activity</dt><dd><a href="${ADMIN_PATHS.audit}?account=${account.id}">In the audit log</a></dd></div>
</dl>
<form class="admin-role" method="post" action="${ADMIN_PATHS.accountAction(account.id, 'role')}" novalidate>
!${token}
!${select(data.form, { name: 'role', label: 'Role', choices: ROLE_CHOICES, selected: account.role, hint: 'An admin sees the Admin pages. The server keeps at least one admin who can sign in.' })}
<div class="actions"><button class="button" type="submit">Save role</button></div>
</form>
!${storageSection(data)}
<h2>Access</h2>
!${toggle}
!${reset}
!${
    data.self
      ? ''
      : html`<h2>Delete</h2>
<p><a class="button danger" href="${ADMIN_PATHS.accountAction(account.id, 'delete')}">Delete account&#8230;</a></p>`
  }`
  return adminPage(nav, 'accounts', account.email, body)
}

const gigabytes = (bytes: number | null) => (bytes === null ? '' : String(Math.round(bytes / 1e6) / 1e3))

/** What the account stores, and the form that sets its quota and largest file. */
function storageSection(data: {
  account: ManagedAccount
  usage: Usage
  defaultQuotaBytes: number | null
  form?: FormState
  nav: AppNav
}): string {
  const { account, usage } = data
  const defaultWords = data.defaultQuotaBytes === null ? 'unlimited' : formatSize(data.defaultQuotaBytes)
  const values = {
    quota: usage.quotaSetting,
    quotaGb: usage.quotaSetting === 'own' ? gigabytes(usage.quotaBytes) : '',
    maxFileGb: gigabytes(usage.maxFileBytes),
    ...data.form?.values,
  }
  const form = { ...data.form, values }
  return html`<h2>Storage</h2>
<p>${storedWords(usage)}!${usage.trashFiles > 0 ? html` (${formatCount(usage.trashFiles)} in the trash, ${formatSize(usage.trashBytes)})` : ''}.</p>
<form method="post" action="${ADMIN_PATHS.accountAction(account.id, 'quota')}" novalidate>
!${csrfInput(data.nav.csrfToken)}
!${select(form, {
    name: 'quota',
    label: 'Quota',
    choices: [
      { value: 'default', label: `The server’s default (${defaultWords})` },
      { value: 'own', label: 'Its own quota' },
      { value: 'unlimited', label: 'Unlimited' },
    ],
    hint: 'What it may store, the trash included. Lowering it deletes nothing: new uploads are refused.',
  })}
!${field(form, { name: 'quotaGb', label: 'Its own quota, in GB', type: 'text', inputMode: 'text', maxLength: 20, required: false, placeholder: '10', hint: 'With “Its own quota”: a number of gigabytes (1 GB = 1,000,000,000 bytes), such as 2.5.' })}
!${field(form, { name: 'maxFileGb', label: 'Largest file, in GB', type: 'text', inputMode: 'text', maxLength: 20, required: false, hint: 'Empty: only the server’s limit.' })}
<div class="actions"><button class="button" type="submit">Save storage limits</button></div>
</form>`
}

/** An account an admin deleted: its files are being purged; nothing more can be done to it. */
function beingDeletedPage(nav: AppNav, account: ManagedAccount): Page {
  const body = html`<p class="muted"><a href="${ADMIN_PATHS.accounts}">All accounts</a></p>
<p><bdi>${account.email}</bdi>!${badges(account)}</p>
<p>Deleted !${time(account.deletingAt, '')}: it cannot sign in, and its files are being deleted for good with their bytes. The account goes with them, within minutes.</p>`
  return adminPage(nav, 'accounts', account.email, body)
}

/** The confirmation of deleting an account: the admin types its email. */
export function deleteAccountPage(data: { nav: AppNav; account: ManagedAccount; form?: FormState }): Page {
  const { account, nav } = data
  const form = data.form ?? {}
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Delete this account?</h1>
<p><strong><bdi>${account.email}</bdi></strong> is signed out everywhere at once and cannot sign in again. Its files, its links and requests, its keys and its webhooks are deleted for good. This cannot be undone.</p>
<form method="post" action="${ADMIN_PATHS.accountAction(account.id, 'delete')}" novalidate>
!${csrfInput(nav.csrfToken)}
!${formError(form)}
!${field(form, { name: 'email', label: 'Type the account’s email to confirm', type: 'text', autocomplete: 'off', maxLength: 254, hint: account.email })}
<div class="actions"><button class="button primary danger-fill" type="submit">Delete account</button><a class="button" href="${ADMIN_PATHS.account(account.id)}">Cancel</a></div>
</form>
</div></section>`
  return { title: 'Delete this account? · Admin · Coffer', main, nav }
}

function invitationRow(invitation: Invitation, csrfToken: string, now: number): string {
  const ended = invitation.expiresAt <= now
  return html`<li class="item${ended ? ' is-inactive' : ''}">
<div class="item-main">
<p class="item-title">${invitation.email ?? 'A link to hand over'}!${invitation.role === 'admin' ? html` <span class="badge badge-on">Admin</span>` : ''}!${ended ? html` <span class="badge">Expired</span>` : ''}</p>
<p class="item-meta">Made !${time(invitation.createdAt, '')} &#183; !${ended ? 'ended' : 'works until'} !${time(invitation.expiresAt, '')}</p>
</div>
<div class="actions"><form method="post" action="${ADMIN_PATHS.revokeInvitation(invitation.id)}">!${csrfInput(csrfToken)}<button class="button small" type="submit" aria-label="${ended ? 'Remove' : 'Revoke'} the invitation ${invitation.email ?? ''}">!${ended ? 'Remove' : 'Revoke'}</button></form></div>
</li>`
}

export function invitationsPage(data: {
  nav: AppNav
  invitations: Invitation[]
  emailsInvitations: boolean
  /** SIGNUP=closed: invitations are off. */
  closed: boolean
  /** The invitation just made: its link, shown this once, and whether it was emailed too. */
  created?: { invitation: Invitation; link: string; emailed: boolean }
  form?: FormState
  notice?: string
  now: number
}): Page {
  const { nav, created } = data
  const form = data.form ?? {}
  const made = created
    ? html`<div class="secret-box" role="status" tabindex="-1" id="new-invitation">
<h2>!${created.emailed ? html`Invitation emailed to ${created.invitation.email ?? ''}` : 'Invitation made'}</h2>
<p>!${created.emailed ? 'The same link is below, if you would rather send it yourself. ' : 'Send this link to the person you invite. '}It works once, for 7 days, and is not shown again.</p>
<div class="secret-row"><code class="secret" id="new-invitation-link">${created.link}</code>
<button class="button" type="button" data-copy="${created.link}" data-copy-done="Link copied to the clipboard." hidden>Copy link</button></div>
<p class="toast" data-copy-status aria-live="polite"></p>
</div>`
    : ''
  const list =
    data.invitations.length === 0
      ? html`<p class="muted">No invitations waiting.</p>`
      : html`<ul class="items" aria-label="Invitations not used yet">!${data.invitations.map((invitation) => invitationRow(invitation, nav.csrfToken, data.now))}</ul>`
  if (data.closed) {
    const body = html`<p>Invitations are off on this server: it is set to <code>SIGNUP=closed</code>, where accounts are made with the admin command only (<code>npm run cli -- accounts create --email …</code>). Set <code>SIGNUP=invite</code> to invite people from here.</p>`
    return adminPage(nav, 'invitations', 'Invitations', body)
  }
  const body = html`!${notice(data.notice)}
!${made}
<h2 id="invite-title">Invite someone</h2>
<form method="post" action="${ADMIN_PATHS.invitations}" novalidate aria-labelledby="invite-title">
!${csrfInput(nav.csrfToken)}
!${formError(form)}
!${field(form, { name: 'email', label: 'Email', type: 'email', maxLength: 254, required: false, hint: data.emailsInvitations ? 'The invitation is emailed there, and makes the account of that address. Leave it empty for a link to hand over yourself.' : 'The invitation makes the account of that address; leave it empty for anyone you hand the link to. This server sends no email: you send the link.' })}
!${select(form, { name: 'role', label: 'Role', choices: ROLE_CHOICES, selected: 'member' })}
<div class="actions"><button class="button primary" type="submit">Make invitation</button></div>
</form>
<h2>Waiting</h2>
!${list}`
  return adminPage(nav, 'invitations', 'Invitations', body)
}
