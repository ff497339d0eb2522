// The owner's pages of file requests in the web app: the list, the form that makes or edits one, and a
// request's own page with its public link, limits, actions and submissions. Every text from a user (titles,
// descriptions, folder names, what submitters typed, file names) goes through ghtml's escaping `${…}`;
// `!${…}` only inserts fragments made here. The routes are requests-app.routes.ts.
import { html } from 'ghtml'
import {
  dayEndingAt,
  endsItsDay,
  timeZoneInput,
  untilWhen,
  untilWords,
  zoneWords,
} from '../../platform/web/chosen-days.ts'
import { describeType, formatCount, formatDate, formatSize } from '../../platform/web/format.ts'
import {
  checkbox,
  csrfInput,
  type FormState,
  field,
  formError,
  notice,
  select,
  textArea,
} from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { Folder } from '../folders/folders.repository.ts'
import { requestStateOf } from './request-state.ts'
import type { FileRequest, SubmissionWithFile } from './requests.repository.ts'
import { MAX_FILES_BOUND } from './requests.schemas.ts'
import type { FolderChoices } from './requests.service.ts'
import { type Sending, sendingsOf } from './sendings.ts'
import { describeAllowedTypes } from './submission-rules.shared.ts'

export const REQUEST_PATHS = {
  list: '/requests',
  new: '/requests/new',
  create: '/requests',
  page: (id: string) => `/requests/${id}`,
  edit: (id: string) => `/requests/${id}/edit`,
  update: (id: string) => `/requests/${id}`,
  disable: (id: string) => `/requests/${id}/disable`,
  enable: (id: string) => `/requests/${id}/enable`,
  move: (id: string) => `/requests/${id}/move`,
  /** The file's page in the app (files-app.routes.ts). */
  file: (id: string) => `/files/${id}`,
  /** A folder's view in the app (files-app.routes.ts). */
  folder: (id: string) => `/folders/${id}`,
} as const

/** What every page of this section is given. */
interface Common {
  nav: AppNav
  csrfToken: string
  /** The sentence of a `done` code, after a change. */
  notice?: string
  /** The reader's time zone: deadlines are shown, and their days chosen, in it (web/chosen-days.ts). */
  timeZone: string
}

/** The public link of a request, as the API gives it (public-urls.ts). */
type LinkOf = (request: FileRequest) => string

const INBOX_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4 13.5 6.2 5.8A2 2 0 0 1 8.1 4.4h7.8a2 2 0 0 1 1.9 1.4L20 13.5V18a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2v-4.5Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/><path d="M4 13.5h4.5l1.2 2h4.6l1.2-2H20" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></svg>`
const PLUS_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 5v14M5 12h14" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round"/></svg>`
const FOLDER_ICON = html`<svg class="req-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M3.5 7.5A2 2 0 0 1 5.5 5.5h4l2 2.2h7a2 2 0 0 1 2 2V17a2 2 0 0 1-2 2h-13a2 2 0 0 1-2-2Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></svg>`
const FILE_ICON = html`<svg class="req-file-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M7 3.5h7l4.5 4.5v11a1.5 1.5 0 0 1-1.5 1.5H7A1.5 1.5 0 0 1 5.5 19V5A1.5 1.5 0 0 1 7 3.5Z" fill="none" stroke="currentColor" stroke-width="1.7" stroke-linejoin="round"/><path d="M14 3.5V8h4.5" fill="none" stroke="currentColor" stroke-width="1.7" stroke-linejoin="round"/></svg>`

function when(ms: number): string {
  return html`<time datetime="${new Date(ms).toISOString()}" data-local>${formatDate(ms)}</time>`
}

const plural = (n: number, one: string, many = `${one}s`) => `${formatCount(n)} ${n === 1 ? one : many}`

/** The state badge of a request, and what its page says about it. */
function status(request: FileRequest, now: number) {
  const state = requestStateOf(request, now)
  switch (state) {
    case 'open':
      return { open: true, label: 'Active', reason: '', explain: '' }
    case 'disabled':
      return {
        open: false,
        label: 'Closed',
        reason: 'Disabled',
        explain:
          'Disabled: its public page says it no longer accepts files. Enable it to accept files again.',
      }
    case 'past_deadline':
      return {
        open: false,
        label: 'Closed',
        reason: 'Deadline passed',
        explain:
          'Its deadline has passed: its public page no longer accepts files. Edit the deadline to accept files again.',
      }
    case 'full':
      return {
        open: false,
        label: 'Closed',
        reason: 'File limit reached',
        explain:
          'It has received every file it accepts. Raise or clear its maximum number of files to accept more.',
      }
  }
}

function statusBadge(request: FileRequest, now: number): string {
  const s = status(request, now)
  return s.open
    ? html`<span class="badge req-badge is-open">Active</span>`
    : html`<span class="badge req-badge is-closed">Closed<span class="req-badge-reason"> · ${s.reason}</span></span>`
}

function folderName(folder: Folder | null): string {
  return folder
    ? html`<a href="${REQUEST_PATHS.folder(folder.id)}">${folder.name}</a>`
    : html`<span>No folder</span>`
}

/** The public link with its Copy button (page.client.ts shows the button where the clipboard works). */
function publicLink(url: string, title: string, options: { open?: boolean } = {}): string {
  return html`<div class="req-link">
<code class="req-url">${url}</code>
<span class="req-link-actions"><button class="button small" type="button" data-copy="${url}" data-copy-done="Public link copied to the clipboard." aria-label="Copy link of ${title}" hidden>Copy link</button>!${
    options.open
      ? html`<a class="button small" href="${url}">Open<span class="sr-only"> the public page</span></a>`
      : ''
  }</span>
</div>`
}

function pageHead(title: string, intro: string, action: string): string {
  return html`<div class="req-head">
<div><h1 id="page-title">${title}</h1><p class="muted req-intro">${intro}</p></div>
!${action}
</div>`
}

const NEW_BUTTON = html`<a class="button primary" href="${REQUEST_PATHS.new}">!${PLUS_ICON}New request</a>`

// --- The list ---------------------------------------------------------------------------------------------

export interface ListView extends Common {
  requests: FileRequest[]
  nextCursor: string | null
  /** Whether this is a later page (a cursor was given): an empty one is not the empty state. */
  later: boolean
  linkOf: LinkOf
  now: number
}

function listItem(request: FileRequest, linkOf: LinkOf, now: number, timeZone: string): string {
  const s = status(request, now)
  const { deadlineAt, maxFiles } = request.limits
  const count = request.submissionCount
  return html`<li class="item req-item!${s.open ? '' : ' is-inactive'}">
<div class="item-main">
<p class="item-title req-title"><a href="${REQUEST_PATHS.page(request.id)}">${request.title}</a> !${statusBadge(request, now)}</p>
<ul class="meta req-meta">
<li class="req-folder">!${FOLDER_ICON}!${folderName(request.folder)}</li>
<li>Created !${when(request.createdAt)}</li>
!${deadlineAt === null ? '' : html`<li>Until !${untilWhen(deadlineAt, timeZone)}</li>`}
!${maxFiles === null ? '' : html`<li>${plural(maxFiles, 'file')} at most</li>`}
</ul>
!${publicLink(linkOf(request), request.title)}
</div>
<p class="req-count"><span class="req-count-number">${formatCount(count)}</span> <span class="req-count-label">${count === 1 ? 'file received' : 'files received'}</span></p>
</li>`
}

function emptyState(): string {
  return html`<section class="card req-empty" aria-labelledby="empty-title"><div class="card-body">
<span class="req-empty-icon">!${INBOX_ICON}</span>
<h2 id="empty-title">No file requests yet</h2>
<p class="muted req-empty-text">A file request is a link you send to anyone who should send you files: a client with documents, a
colleague with photos. They open it, add their name and files, and the files arrive in your Coffer, in the folder
you choose. They need no account, and see nothing else of yours.</p>
<div class="actions">!${NEW_BUTTON}</div>
</div></section>`
}

export function requestsListPage(view: ListView): Page {
  const empty = view.requests.length === 0 && !view.later
  const main = html`<div class="req-page">
!${pageHead('File requests', 'Links that let anyone send you files, no account needed.', empty ? '' : NEW_BUTTON)}
!${notice(view.notice)}
<p class="req-copy-status" role="status" data-copy-status></p>
!${
    empty
      ? emptyState()
      : html`<ul class="items req-list" aria-labelledby="page-title">!${view.requests.map((r) => listItem(r, view.linkOf, view.now, view.timeZone))}</ul>
!${view.requests.length === 0 ? html`<p class="muted">No more file requests.</p>` : ''}
!${view.nextCursor ? html`<div class="req-more"><a class="button" href="${REQUEST_PATHS.list}?cursor=${view.nextCursor}">More requests</a></div>` : ''}`
  }
</div>`
  return { title: 'File requests · Coffer', main, nav: view.nav }
}

// --- The form of a new or changed request --------------------------------------------------------------

/** How the email question is asked on the form: the two settings of the API as one choice. */
export const EMAIL_CHOICES = [
  { value: 'required', label: 'Ask for it, required' },
  { value: 'optional', label: 'Ask for it, optional' },
  { value: 'off', label: 'Do not ask' },
] as const

export type EmailChoice = (typeof EMAIL_CHOICES)[number]['value']

export function emailChoiceOf(request: Pick<FileRequest, 'collectEmail' | 'emailRequired'>): EmailChoice {
  if (!request.collectEmail) return 'off'
  return request.emailRequired ? 'required' : 'optional'
}

/** A byte count in the form's megabytes (1 MB = 1,000,000 bytes), without trailing zeros. */
export const inMegabytes = (bytes: number) => String(Number((bytes / 1_000_000).toFixed(6)))

/** What the form shows of a request when it opens, its deadline's day in the reader's `timeZone`. */
export function formValuesOf(request: FileRequest, timeZone: string): Record<string, string> {
  const { deadlineAt, maxFiles, maxFileSize, allowedTypes } = request.limits
  return {
    title: request.title,
    description: request.description ?? '',
    folderId: request.folderId ?? '',
    email: emailChoiceOf(request),
    deadline: deadlineAt === null ? '' : dayEndingAt(deadlineAt, timeZone),
    deadlineKept: deadlineAt === null ? '' : new Date(deadlineAt).toISOString(),
    maxFiles: maxFiles === null ? '' : String(maxFiles),
    maxFileSize: maxFileSize === null ? '' : inMegabytes(maxFileSize),
    allowedTypes: allowedTypes.join(', '),
    emailOwner: request.emailOwner ? 'on' : '',
  }
}

export interface FormView extends Common {
  state?: FormState
  folders: FolderChoices
  /** The request being edited; none for a new one. */
  request?: FileRequest
  /** The largest file the server accepts (MAX_FILE_SIZE), in bytes. */
  serverMaxFileSize: number
  /** How many folders the choice lists at most. */
  folderLimit: number
  /** Whether the server sends email: the switch "Email me on each submission" is offered then. */
  canEmail: boolean
}

function folderChoices(choices: FolderChoices) {
  return [
    { value: '', label: 'No folder' },
    ...choices.folders.map((folder) => ({ value: folder.id, label: folder.name })),
  ]
}

function folderHint(choices: FolderChoices, limit: number, what: string): string {
  const base = `Where ${what}.`
  return choices.more
    ? `${base} The first ${limit} folders by name are listed; to use another, rename it so that it sorts earlier.`
    : base
}

/** The deadline's hint; when editing a deadline that is not at the end of its day, that time is kept. */
function deadlineHint(state: FormState | undefined, timeZone: string): string {
  const base = `Files are accepted until the end of this day, ${zoneWords(timeZone)}. Empty: no deadline.`
  const kept = Date.parse(state?.values?.deadlineKept ?? '')
  if (Number.isNaN(kept) || endsItsDay(kept, timeZone)) return base
  return `${base} The current deadline, ${untilWords(kept, timeZone)}, is kept while the day stays the same.`
}

export function requestFormPage(view: FormView): Page {
  const { state, request } = view
  const editing = request !== undefined
  const title = editing ? 'Edit file request' : 'New file request'
  const action = editing ? REQUEST_PATHS.update(request.id) : REQUEST_PATHS.create
  const back = editing ? REQUEST_PATHS.page(request.id) : REQUEST_PATHS.list
  const main = html`<div class="req-page req-narrow">
<nav class="req-crumbs" aria-label="Breadcrumb"><a href="${REQUEST_PATHS.list}">File requests</a>!${
    editing ? html` <span aria-hidden="true">/</span> <a href="${back}">${request.title}</a>` : ''
  }</nav>
<section class="card req-form-card" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">${title}</h1>
<p class="muted">!${
    editing
      ? 'Changes apply to the public page at once; files already received stay where they are.'
      : 'You get a public link to send to the people who should send you files. Limits are optional; you can change everything later.'
  }</p>
<form method="post" action="${action}" novalidate class="req-form">
!${csrfInput(view.csrfToken)}
!${timeZoneInput(view.timeZone)}
!${formError(state)}
!${state?.values?.deadlineKept ? html`<input type="hidden" name="deadlineKept" value="${state.values.deadlineKept}">` : ''}
!${field(state, { name: 'title', label: 'Title', maxLength: 100, hint: 'Shown on the public page. 3 to 100 characters.' })}
!${textArea(state, { name: 'description', label: 'Description', required: false, rows: 4, maxLength: 500, hint: 'What to send, and why. Shown on the public page; up to 500 characters.' })}
!${select(state, { name: 'folderId', label: 'Folder', required: false, choices: folderChoices(view.folders), hint: folderHint(view.folders, view.folderLimit, 'the files sent through this request are put') })}
!${select(state, { name: 'email', label: 'Submitter’s email', choices: EMAIL_CHOICES, selected: 'required', hint: 'Whether the public page asks the people who send files for their email address.' })}
!${view.canEmail ? checkbox(state, { name: 'emailOwner', label: 'Email me on each submission', checked: state?.values === undefined, hint: 'Who sent what, with their message. At most one email every five minutes: what arrives meanwhile is gathered into it.' }) : ''}
<fieldset class="req-limits">
<legend>Limits</legend>
<p class="hint">All optional: leave a field empty for no limit of that kind.</p>
<div class="req-limits-grid">
!${field(state, { name: 'deadline', label: 'Deadline', type: 'date', required: false, hint: deadlineHint(state, view.timeZone) })}
!${field(state, { name: 'maxFiles', label: 'Maximum files', type: 'number', required: false, min: 1, max: MAX_FILES_BOUND, step: 1, inputMode: 'numeric', hint: 'Files accepted in all, from everyone together.' })}
!${field(state, { name: 'maxFileSize', label: 'Maximum file size (MB)', type: 'number', required: false, min: 0.001, step: 'any', hint: `The largest file accepted, in megabytes (1 MB = 1,000,000 bytes). This server takes files of up to ${formatSize(view.serverMaxFileSize)}.` })}
!${field(state, { name: 'allowedTypes', label: 'Allowed types', required: false, maxLength: 2000, placeholder: '.pdf, .docx, image/*', hint: 'Extensions or media types, separated by commas: .pdf, .docx, image/*. Empty: any type.' })}
</div>
</fieldset>
<div class="actions"><button class="button primary" type="submit">${editing ? 'Save changes' : 'Create request'}</button><a class="button" href="${back}">Cancel</a></div>
</form>
</div></section>
</div>`
  return { title: `${title} · Coffer`, main, nav: view.nav }
}

// --- A request's page -------------------------------------------------------------------------------------

export interface RequestView extends Common {
  request: FileRequest
  publicUrl: string
  submissions: SubmissionWithFile[]
  nextCursor: string | null
  /** Whether this is a later page of submissions. */
  later: boolean
  folders: FolderChoices
  folderLimit: number
  /** The move form shown again with its problem. */
  moveState?: FormState
  serverMaxFileSize: number
  now: number
}

function stat(label: string, value: string, extra = ''): string {
  return html`<div class="req-stat"><dt>${label}</dt><dd>!${value}!${extra ? html`<span class="req-stat-note">${extra}</span>` : ''}</dd></div>`
}

function stats(request: FileRequest, view: RequestView): string {
  const { deadlineAt, maxFiles } = request.limits
  const count = request.submissionCount
  return html`<dl class="req-stats">
!${stat('Files received', html`${formatCount(count)}`)}
!${stat('Files accepted', maxFiles === null ? 'No limit' : html`${formatCount(count)} of ${formatCount(maxFiles)}`)}
!${stat('Deadline', deadlineAt === null ? 'None' : untilWhen(deadlineAt, view.timeZone), deadlineAt !== null && deadlineAt <= view.now ? 'passed' : '')}
!${stat('Largest file', request.limits.maxFileSize === null ? html`${formatSize(view.serverMaxFileSize)}` : html`${formatSize(request.limits.maxFileSize)}`, request.limits.maxFileSize === null ? 'server limit' : '')}
</dl>`
}

function facts(request: FileRequest): string {
  const email = { required: 'Asked, required', optional: 'Asked, optional', off: 'Not asked' }[
    emailChoiceOf(request)
  ]
  const types = request.limits.allowedTypes
  return html`<dl class="req-facts">
<div><dt>Folder</dt><dd class="req-folder">!${FOLDER_ICON}!${folderName(request.folder)}</dd></div>
<div><dt>Created</dt><dd>!${when(request.createdAt)}</dd></div>
<div><dt>Accepted types</dt><dd>${types.length === 0 ? 'Any type' : describeAllowedTypes(types)}</dd></div>
<div><dt>Submitter’s email</dt><dd>${email}</dd></div>
</dl>`
}

/** Edit, and Disable or Enable: beside the title. */
function actions(view: RequestView): string {
  const { request } = view
  const toggle = request.isActive
    ? html`<form method="post" action="${REQUEST_PATHS.disable(request.id)}" class="req-toggle">!${csrfInput(view.csrfToken)}<button class="button danger" type="submit">Disable</button></form>`
    : html`<form method="post" action="${REQUEST_PATHS.enable(request.id)}" class="req-toggle">!${csrfInput(view.csrfToken)}<button class="button primary" type="submit">Enable</button></form>`
  return html`<div class="req-top-actions"><a class="button" href="${REQUEST_PATHS.edit(request.id)}">Edit</a>!${toggle}</div>`
}

/**
 * The choice of a folder and its button on one line. Written out rather than with `select` (web/forms.ts),
 * whose label would say "(optional)" of a choice that always has a value ("No folder" is one).
 */
function moveForm(view: RequestView): string {
  const { request } = view
  const error = view.moveState?.errors?.folderId
  const current = view.moveState?.values?.folderId ?? request.folderId ?? ''
  const describedBy = error ? 'move-folder-hint move-folder-error' : 'move-folder-hint'
  return html`<form method="post" action="${REQUEST_PATHS.move(request.id)}" class="req-move" novalidate>
!${csrfInput(view.csrfToken)}
<div class="field">
<label for="move-folder">Move to folder</label>
<p class="hint" id="move-folder-hint">${folderHint(view.folders, view.folderLimit, 'files sent from now on are put; files already received stay where they are')}</p>
<div class="req-move-row"><select id="move-folder" name="folderId" aria-describedby="${describedBy}"!${error ? ' aria-invalid="true"' : ''}>!${folderChoices(
    view.folders,
  ).map(
    (choice) =>
      html`<option value="${choice.value}"!${choice.value === current ? ' selected' : ''}>${choice.label}</option>`,
  )}</select><button class="button" type="submit">Move</button></div>
!${error ? html`<p class="field-error" id="move-folder-error">${error}</p>` : ''}
</div>
</form>`
}

function submittedFile(submission: SubmissionWithFile): string {
  const { file } = submission
  return html`<p class="req-sub-file">!${FILE_ICON}!${
    submission.fileExists
      ? html`<a class="req-sub-name" href="${REQUEST_PATHS.file(file.id)}">${file.name}</a>`
      : html`<span class="req-sub-name">${file.name}</span> <span class="badge">Deleted</span>`
  } <span class="req-sub-type">${describeType(file.contentType)} · ${formatSize(file.size)}</span></p>`
}

/** A sending: its files, then who sent them, when, and their message once. */
function sendingItem(sending: Sending<SubmissionWithFile>): string {
  const { first, submissions } = sending
  const name = first.submitterName
  const email = first.submitterEmail
  const count = submissions.length
  return html`<li class="item req-sub">
<div class="item-main">
!${submissions.map(submittedFile)}
<p class="item-meta req-sub-who">From <span class="req-sub-person">${name ?? 'someone who gave no name'}</span>!${email ? html` · <span class="req-sub-email">${email}</span>` : ''} · !${when(first.createdAt)}!${count > 1 ? html` · ${formatCount(count)} files sent together` : ''}</p>
!${first.message ? html`<p class="req-sub-message">${first.message}</p>` : ''}
</div>
</li>`
}

function submissionsSection(view: RequestView): string {
  const { request, submissions } = view
  const count = request.submissionCount
  const body =
    submissions.length === 0
      ? view.later
        ? html`<p class="muted">No more submissions.</p>`
        : html`<div class="req-none"><p class="muted req-none-text">No files yet. Send the public link to the people who should send you files: what they send appears here, and in !${request.folder ? html`the folder <strong>${request.folder.name}</strong>` : 'your files'}.</p></div>`
      : html`<ul class="items req-subs">!${sendingsOf(submissions).map(sendingItem)}</ul>`
  return html`<section class="card" id="submissions" aria-labelledby="submissions-title"><div class="card-body">
<h2 id="submissions-title">Submissions <span class="badge">${formatCount(count)} ${count === 1 ? 'file' : 'files'}</span></h2>
!${body}
!${view.nextCursor ? html`<div class="req-more"><a class="button" href="${REQUEST_PATHS.page(request.id)}?cursor=${view.nextCursor}#submissions">More submissions</a></div>` : ''}
</div></section>`
}

export function requestDetailsPage(view: RequestView): Page {
  const { request } = view
  const s = status(request, view.now)
  const main = html`<div class="req-page">
<nav class="req-crumbs" aria-label="Breadcrumb"><a href="${REQUEST_PATHS.list}">File requests</a></nav>
!${notice(view.notice)}
<section class="card" aria-labelledby="page-title"><div class="card-body">
<div class="req-top">
<div class="req-top-main">
<p class="eyebrow">!${INBOX_ICON}File request</p>
<h1 id="page-title" class="req-title">${request.title} !${statusBadge(request, view.now)}</h1>
</div>
!${actions(view)}
</div>
!${request.description ? html`<p class="description">${request.description}</p>` : ''}
!${s.open ? '' : html`<p class="inline-notice req-closed">${s.explain}</p>`}
<h2 class="req-subhead">Public link</h2>
!${publicLink(view.publicUrl, request.title, { open: true })}
<p class="req-copy-status" role="status" data-copy-status></p>
!${stats(request, view)}
!${facts(request)}
!${formError(view.moveState)}
!${moveForm(view)}
</div></section>
!${submissionsSection(view)}
</div>`
  return { title: `${request.title} · File requests · Coffer`, main, nav: view.nav }
}
