// The audit log for people: an entry in words (what, by whom, from where, when, with what), the kind filter, and
// the owner's page (/account/activity). The admin's page (admin/) lists entries with the same parts. Every value
// from a user goes through ghtml's escaping `${…}`; `!${…}` only inserts fragments made here.
import { html } from 'ghtml'
import { AUDIT_KINDS, type AuditKind, isAuditKind } from '../../platform/audit/audit-kinds.ts'
import type { Actor } from '../../platform/audit/audit-log.ts'
import { actorWords } from '../../platform/audit/audit-words.shared.ts'
import { formatDateTime } from '../../platform/web/format.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import { ACCOUNT_PATHS, settingsPage } from '../accounts/account-pages.views.ts'
import type { AuditEntry } from './audit.service.ts'

/** The families of kinds as the filter offers them; `invitation` only to admins, whose invitations they are. */
export const FAMILY_LABELS: Record<string, string> = {
  account: 'Sign-ins and the account',
  invitation: 'Invitations',
  key: 'API keys',
  oauth: 'Applications',
  share: 'Share links',
  folder_share: 'Folder links',
  file: 'Files',
  request: 'File requests',
  webhook: 'Webhooks',
}

/** Who did it, in words: "you" for the person reading, else as every client says it (audit-words.shared.ts). */
function byWhom(actor: Actor, viewerId: string | undefined): string {
  if (actor.id !== null && actor.id === viewerId) {
    if (actor.type === 'account') return 'by you'
    if (actor.type === 'admin') return 'by you, as admin'
  }
  return html`by <bdi>${actorWords(actor)}</bdi>`
}

/** What the change was, from its details: "name: report.pdf · scopes: files:read files:write". */
function detailWords(details: Record<string, unknown>): string {
  const parts = Object.entries(details)
    .filter(([, value]) => value !== null && value !== '')
    .map(([key, value]) => {
      const text = Array.isArray(value) ? value.join(' ') : String(value)
      return html`<span class="audit-detail"><span class="muted">${key}:</span> <bdi>${text}</bdi></span>`
    })
  return parts.length === 0 ? '' : html`<p class="item-meta audit-details">!${parts.join(' &#183; ')}</p>`
}

const labelOf = (kind: string) => (isAuditKind(kind) ? AUDIT_KINDS[kind as AuditKind].label : kind)

/** One entry as a list item; with `account`, the account it belongs to too (the admin's list). */
export function entryItem(
  entry: AuditEntry,
  options: { viewerId?: string; account?: (entry: AuditEntry) => string },
): string {
  const at = html`<time datetime="${new Date(entry.at).toISOString()}" data-local>${formatDateTime(entry.at)}</time>`
  const from = entry.address ? html` &#183; from <span class="mono">${entry.address}</span>` : ''
  return html`<li class="item audit-entry">
<div class="item-main">
<p class="item-title">${labelOf(entry.kind)}!${options.account ? html` <span class="muted">&#183;</span> !${options.account(entry)}` : ''}</p>
<p class="item-meta">!${byWhom(entry.actor, options.viewerId)}!${from} &#183; !${at}</p>
!${detailWords(entry.details)}
</div>
</li>`
}

/** The kind filter: a select of the families, submitted with its button (no script needed). */
export function kindFilter(
  action: string,
  current: string | undefined,
  families: readonly string[],
  hidden: Record<string, string> = {},
): string {
  const options = [html`<option value="">Everything</option>`].concat(
    families.map(
      (family) =>
        html`<option value="${family}"!${family === current ? ' selected' : ''}>${FAMILY_LABELS[family] ?? family}</option>`,
    ),
  )
  return html`<form class="search audit-filter" method="get" action="${action}">
!${Object.entries(hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<label for="audit-kind">Show</label>
<select id="audit-kind" name="kind">!${options.join('')}</select>
<button class="button" type="submit">Filter</button>
</form>`
}

/** Older and Newest, for a list paged by cursor. */
export function pager(label: string, newestHref: string | null, olderHref: string | null): string {
  if (!newestHref && !olderHref) return ''
  return html`<nav class="pager" aria-label="${label}">!${newestHref ? html`<a class="button" href="${newestHref}">Newest</a>` : ''}!${olderHref ? html`<a class="button" href="${olderHref}" rel="next">Older</a>` : ''}</nav>`
}

/** The families an owner may filter by: all but the admin's invitations. */
const OWNER_FAMILIES = Object.keys(FAMILY_LABELS).filter((family) => family !== 'invitation')

export function activityPage(data: {
  nav: AppNav
  viewerId: string
  entries: AuditEntry[]
  kind: string | undefined
  newestHref: string | null
  olderHref: string | null
  retentionDays: number
}): Page {
  const { entries, kind } = data
  const empty = kind
    ? html`<p class="muted">Nothing of this kind in your activity.</p>`
    : html`<p class="muted">Nothing yet.</p>`
  const body = html`<p class="muted">Who signed in to your account and what was changed in it, newest first: by you, your API keys, the applications you allowed, and admins. Kept for ${data.retentionDays} days.</p>
!${kindFilter(ACCOUNT_PATHS.activity, kind, OWNER_FAMILIES)}
!${entries.length === 0 ? empty : html`<ul class="items" aria-label="Activity, newest first">!${entries.map((entry) => entryItem(entry, { viewerId: data.viewerId }))}</ul>`}
!${pager('Pages of activity', data.newestHref, data.olderHref)}`
  return settingsPage(data.nav, 'activity', 'Activity', body)
}
