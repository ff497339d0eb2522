// The admin's audit log (/admin/audit): every account's entries, newest first, by family of kinds and by account,
// each with the account it belongs to, and the export of what the filter selects as JSON Lines.
import { html } from 'ghtml'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import { entryItem, FAMILY_LABELS, kindFilter, pager } from '../audit/activity.views.ts'
import type { AuditEntry } from '../audit/audit.service.ts'
import { ADMIN_PATHS, adminPage } from './admin-pages.views.ts'

/** The account an entry belongs to: a link to it, or why there is none. */
function accountOf(entry: AuditEntry): string {
  if (entry.accountId === null) return html`<span class="muted">no account</span>`
  if (entry.accountEmail === null)
    return html`<span class="muted">a deleted account (${entry.accountId})</span>`
  return html`<a href="${ADMIN_PATHS.account(entry.accountId)}"><bdi>${entry.accountEmail}</bdi></a>`
}

export function auditPage(data: {
  nav: AppNav
  viewerId: string
  entries: AuditEntry[]
  kind: string | undefined
  /** The account the list is narrowed to, with its email when it exists. */
  account: { id: string; email: string | null } | undefined
  exportHref: string
  newestHref: string | null
  olderHref: string | null
  retentionDays: number
}): Page {
  const { entries, account } = data
  const narrowed = account
    ? html`<p>Only <strong><bdi>${account.email ?? account.id}</bdi></strong>’s activity. <a href="${ADMIN_PATHS.audit}">Everyone’s</a></p>`
    : ''
  const list =
    entries.length === 0
      ? html`<p class="muted">No entries${data.kind || account ? ' match' : ' yet'}.</p>`
      : html`<ul class="items" aria-label="Audit log, newest first">!${entries.map((entry) =>
          entryItem(entry, { viewerId: data.viewerId, account: accountOf }),
        )}</ul>`
  const body = html`<p class="muted">What was done on this server, by whom and from where, newest first: sign-ins, passwords, keys, applications, links, deletions, file requests, webhooks and every admin action. Kept for ${data.retentionDays} days (AUDIT_RETENTION_DAYS).</p>
!${narrowed}
!${kindFilter(ADMIN_PATHS.audit, data.kind, Object.keys(FAMILY_LABELS), account ? { account: account.id } : {})}
<p><a class="button" href="${data.exportHref}" download>Export as JSON Lines</a> <span class="hint">Every entry this filter shows, one JSON object a line.</span></p>
!${list}
!${pager('Pages of the audit log', data.newestHref, data.olderHref)}`
  return adminPage(data.nav, 'audit', 'Audit log', body)
}
