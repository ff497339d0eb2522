// The Share panel of a file's page in the web app: a file without a link gets a button that makes one; a
// file with one shows its full public address to copy, its state, its views and downloads (with a chart per
// day), and the form of its settings: expiry, password, maximum downloads; and the button that turns it off or
// on again. Nothing here shows a password: only whether there is one. It lives with the file's page, which
// draws it; its forms post to shares-app.routes.ts (shares build on files, never the reverse).
import { html } from 'ghtml'
import { type DailyCounts, dailyChart } from '../web/chart.ts'
import { dayEndingAt, timeZoneInput, untilWhen, zoneWords } from '../web/chosen-days.ts'
import { formatCount } from '../web/format.ts'
import { checkbox, csrfInput, type FormState, field, formError } from '../web/forms.ts'
import type { FileShareSummary } from './files.repository.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from './share-settings.shared.ts'
import type { ShareState } from './share-state.ts'

export const SHARE_PATHS = {
  create: (fileId: string) => `/files/${fileId}/share`,
  settings: (shareId: string) => `/shares/${shareId}/settings`,
  disable: (shareId: string) => `/shares/${shareId}/disable`,
} as const

/**
 * What the app's pages say of each state of a link (share-state.ts): its badge, a word or two for lists and
 * pickers, whether it opens, and what to do about it.
 */
export const SHARE_STATE_TEXT: Record<
  ShareState,
  { label: string; short: string; working: boolean; why?: string }
> = {
  active: { label: 'Active', short: 'Shared', working: true },
  disabled: {
    label: 'Turned off',
    short: 'Link off',
    working: false,
    why: 'Nobody can open it until you turn it on again; its address stays the same.',
  },
  expired: {
    label: 'Expired',
    short: 'Expired',
    working: false,
    why: 'Its expiry date has passed. Set a later date, or none, to open it again.',
  },
  exhausted: {
    label: 'Download limit reached',
    short: 'Limit reached',
    working: false,
    why: 'It has been downloaded as many times as you allowed. Raise or remove the limit to open it again.',
  },
}

/** What the panel shows of a link: what every file carries of it, its settings and its address. */
interface PanelLink extends FileShareSummary {
  hasPassword: boolean
  maxDownloads: number | null
  publicUrl: string
}

export interface SharePanelData {
  fileId: string
  csrfToken: string
  share: PanelLink | null
  /** The link's counts per day, for the chart. */
  days?: readonly DailyCounts[]
  /** The settings form shown again with its problems. */
  form?: FormState
  /** The reader's time zone, the one the expiry's day is shown and chosen in (web/chosen-days.ts). */
  timeZone: string
}

const LINK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`

function settingsForm(
  share: PanelLink,
  csrfToken: string,
  state: FormState | undefined,
  timeZone: string,
): string {
  const form: FormState = state ?? {
    values: {
      expires: share.expiresAt === null ? '' : dayEndingAt(share.expiresAt, timeZone),
      maxDownloads: share.maxDownloads === null ? '' : String(share.maxDownloads),
    },
  }
  return html`<details class="share-settings"!${state ? ' open' : ''}>
<summary>Expiry, password and download limit</summary>
<form method="post" action="${SHARE_PATHS.settings(share.id)}" novalidate>
!${csrfInput(csrfToken)}
!${timeZoneInput(timeZone)}
!${formError(form)}
!${field(form, { name: 'expires', label: 'Works until', type: 'date', required: false, hint: `The link stops working at the end of this day, ${zoneWords(timeZone)}. Leave empty for a link that never expires.` })}
!${field(form, { name: 'password', label: share.hasPassword ? 'New password' : 'Password', type: 'password', autocomplete: 'new-password', required: false, maxLength: PASSWORD_LENGTH.max, hint: share.hasPassword ? 'The link asks for a password. Type a new one to change it, or leave this empty to keep it.' : `People must type it before they see anything of the file. ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters.` })}
!${share.hasPassword ? checkbox(form, { name: 'removePassword', label: 'Remove the password', hint: 'Anyone with the link can open it again.' }) : ''}
!${field(form, { name: 'maxDownloads', label: 'Maximum downloads', type: 'number', required: false, min: 1, max: MAX_DOWNLOADS_LIMIT, step: 1, inputMode: 'numeric', hint: `Downloads allowed in all; ${formatCount(share.downloadCount)} so far. Leave empty for no limit.` })}
<div class="actions"><button class="button primary" type="submit">Save settings</button></div>
</form>
</details>`
}

export function sharePanel(data: SharePanelData): string {
  const { share, csrfToken } = data
  if (!share) {
    return html`<section class="card share-panel" aria-labelledby="share-title" id="share"><div class="card-body">
<h2 id="share-title">Share</h2>
<p class="muted">This file is private. A share link lets anyone who has it view and download the file, without an account; you can add a password, an expiry and a download limit, and turn it off at any time.</p>
<form method="post" action="${SHARE_PATHS.create(data.fileId)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button primary" type="submit">!${LINK_ICON}Share</button></form>
</div></section>`
  }
  const state = SHARE_STATE_TEXT[share.state]
  const toggle = share.isActive
    ? html`<form method="post" action="${SHARE_PATHS.disable(share.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button danger" type="submit">Turn the link off</button></form>`
    : html`<form method="post" action="${SHARE_PATHS.create(data.fileId)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button primary" type="submit">Turn the link on again</button></form>`
  const limits = [
    share.expiresAt === null
      ? 'Never expires'
      : html`${share.state === 'expired' ? 'Worked until' : 'Works until'} !${untilWhen(share.expiresAt, data.timeZone)}`,
    share.hasPassword ? 'Asks for a password' : 'No password',
    share.maxDownloads === null
      ? 'No download limit'
      : `${formatCount(share.downloadCount)} of ${formatCount(share.maxDownloads)} downloads used`,
  ]
  return html`<section class="card share-panel" aria-labelledby="share-title" id="share"><div class="card-body">
<div class="share-head"><h2 id="share-title">Share</h2><span class="badge!${state.working ? ' badge-on' : ''}">${state.label}</span></div>
!${state.why ? html`<p class="muted">${state.why}</p>` : ''}
<div class="field">
<label for="share-url">Share link</label>
<div class="copy-row"><input id="share-url" type="url" value="${share.publicUrl}" readonly>
<button class="button" type="button" data-copy="${share.publicUrl}" hidden>Copy link</button>
<a class="button" href="${share.publicUrl}" target="_blank" rel="noopener">Open</a></div>
<p class="toast" role="status" data-copy-status></p>
</div>
<dl class="stats">
<div><dt>Views</dt><dd>${formatCount(share.viewCount)}</dd></div>
<div><dt>Downloads</dt><dd>${formatCount(share.downloadCount)}</dd></div>
</dl>
<ul class="meta" aria-label="Settings of the link">!${limits.map((item) => html`<li>!${item}</li>`)}</ul>
!${settingsForm(share, csrfToken, data.form, data.timeZone)}
<div class="actions">!${toggle}</div>
!${data.days ? html`<h3 class="chart-title">Last ${data.days.length} days</h3>!${dailyChart({ days: data.days, label: 'this link' })}` : ''}
</div></section>`
}
