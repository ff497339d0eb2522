// The Share panel of a file's or a folder's page in the web app: without a link, a button that makes one; with
// one, its full public address to copy, its state, its views and downloads (with a chart per day), and the form
// of its settings: expiry, password, maximum downloads; and the button that turns it off or on again. Nothing
// here shows a password: only whether there is one. It lives with the files pages, which draw it (the folder's
// page is the files list of one folder); its forms post to shares-app.routes.ts (shares build on files and
// folders, never the reverse), to the file link's routes or the folder link's, as its target says.
import { html } from 'ghtml'
import { type DailyCounts, dailyChart } from '../../platform/web/chart.ts'
import { dayEndingAt, timeZoneInput, untilWhen, zoneWords } from '../../platform/web/chosen-days.ts'
import { formatCount } from '../../platform/web/format.ts'
import { checkbox, csrfInput, type FormState, field, formError } from '../../platform/web/forms.ts'
import type { FileShareSummary } from './files.repository.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from './share-settings.shared.ts'
import type { ShareState } from './share-state.ts'

/** What a link opens: a file, or a folder (its files as they are now). */
export type ShareTargetKind = 'file' | 'folder'

/** Where the panel's forms post, for a link of each kind: make it (or turn it on again), its settings, turn it off. */
export const SHARE_PATHS = {
  file: {
    create: (fileId: string) => `/files/${fileId}/share`,
    settings: (shareId: string) => `/shares/${shareId}/settings`,
    disable: (shareId: string) => `/shares/${shareId}/disable`,
  },
  folder: {
    create: (folderId: string) => `/folders/${folderId}/share`,
    settings: (shareId: string) => `/folder-shares/${shareId}/settings`,
    disable: (shareId: string) => `/folder-shares/${shareId}/disable`,
  },
} as const satisfies Record<
  ShareTargetKind,
  Record<'create' | 'settings' | 'disable', (id: string) => string>
>

/** What the panel says of each kind of link, where the two differ. */
const TARGET_WORDS: Record<
  ShareTargetKind,
  { private: string; gives: string; shareButton: string; passwordHint: string; downloadsHint: string }
> = {
  file: {
    private:
      'This file is private. A share link lets anyone who has it view and download the file, without an account; you can add a password, an expiry and a download limit, and turn it off at any time.',
    gives: '',
    shareButton: 'Share',
    passwordHint: 'People must type it before they see anything of the file.',
    downloadsHint: 'Downloads allowed in all',
  },
  folder: {
    private:
      'This folder is private. A share link lets anyone who has it see the files in this folder as they are now, and download them one by one or all at once, without an account; you can add a password, an expiry and a download limit, and turn it off at any time.',
    gives:
      'Anyone with the link can see the files in this folder as they are now, and download them one by one or all at once. Files you add later show up there too; files you move out or delete do not.',
    shareButton: 'Share folder',
    passwordHint: 'People must type it before they see anything of the folder.',
    downloadsHint:
      'Downloads allowed in all (each file downloaded counts one, and so does each Download all)',
  },
}

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
  /** What the link opens, by its id: the panel's forms post to that kind's paths (SHARE_PATHS). */
  target: { kind: ShareTargetKind; id: string }
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
  kind: ShareTargetKind,
  share: PanelLink,
  csrfToken: string,
  state: FormState | undefined,
  timeZone: string,
): string {
  const words = TARGET_WORDS[kind]
  const form: FormState = state ?? {
    values: {
      expires: share.expiresAt === null ? '' : dayEndingAt(share.expiresAt, timeZone),
      maxDownloads: share.maxDownloads === null ? '' : String(share.maxDownloads),
    },
  }
  return html`<details class="share-settings"!${state ? ' open' : ''}>
<summary>Expiry, password and download limit</summary>
<form method="post" action="${SHARE_PATHS[kind].settings(share.id)}" novalidate>
!${csrfInput(csrfToken)}
!${timeZoneInput(timeZone)}
!${formError(form)}
!${field(form, { name: 'expires', label: 'Works until', type: 'date', required: false, hint: `The link stops working at the end of this day, ${zoneWords(timeZone)}. Leave empty for a link that never expires.` })}
!${field(form, { name: 'password', label: share.hasPassword ? 'New password' : 'Password', type: 'password', autocomplete: 'new-password', required: false, maxLength: PASSWORD_LENGTH.max, hint: share.hasPassword ? 'The link asks for a password. Type a new one to change it, or leave this empty to keep it.' : `${words.passwordHint} ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters.` })}
!${share.hasPassword ? checkbox(form, { name: 'removePassword', label: 'Remove the password', hint: 'Anyone with the link can open it again.' }) : ''}
!${field(form, { name: 'maxDownloads', label: 'Maximum downloads', type: 'number', required: false, min: 1, max: MAX_DOWNLOADS_LIMIT, step: 1, inputMode: 'numeric', hint: `${words.downloadsHint}; ${formatCount(share.downloadCount)} so far. Leave empty for no limit.` })}
<div class="actions"><button class="button primary" type="submit">Save settings</button></div>
</form>
</details>`
}

export function sharePanel(data: SharePanelData): string {
  const { share, csrfToken, target } = data
  const paths = SHARE_PATHS[target.kind]
  const words = TARGET_WORDS[target.kind]
  if (!share) {
    return html`<section class="card share-panel" aria-labelledby="share-title" id="share"><div class="card-body">
<h2 id="share-title">Share</h2>
<p class="muted">${words.private}</p>
<form method="post" action="${paths.create(target.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button primary" type="submit">!${LINK_ICON}${words.shareButton}</button></form>
</div></section>`
  }
  const state = SHARE_STATE_TEXT[share.state]
  const toggle = share.isActive
    ? html`<form method="post" action="${paths.disable(share.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button danger" type="submit">Turn the link off</button></form>`
    : html`<form method="post" action="${paths.create(target.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button primary" type="submit">Turn the link on again</button></form>`
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
!${state.why ? html`<p class="muted">${state.why}</p>` : words.gives ? html`<p class="muted">${words.gives}</p>` : ''}
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
!${settingsForm(target.kind, share, csrfToken, data.form, data.timeZone)}
<div class="actions">!${toggle}</div>
!${data.days ? html`<h3 class="chart-title">Last ${data.days.length} days</h3>!${dailyChart({ days: data.days, label: 'this link' })}` : ''}
</div></section>`
}
