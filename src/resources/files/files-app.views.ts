// The owner's files in the web app: the home page (every file, newest first, or one folder's, or a search),
// with the folders beside it, the uploader, and the form that acts on several files at once; the
// confirmation of a bulk delete. Rows are rendered here only, also for the rows the uploader adds without a
// reload (GET /files/rows). Every value from a user (names of files and folders, the search) goes through
// ghtml's escaping `${…}`; `!${…}` only inserts fragments made here. Characters beyond Latin-1 in the templates
// are written as character references (&#8230; for an ellipsis): one such character makes V8 hold the whole
// page as two bytes a character, and a home page of 100,000 characters then took 4 ms of CPU to send instead of
// 1 (bench/app.ts; docs/architecture.md, "Performance").
import { html } from 'ghtml'
import {
  describeType,
  extensionLabel,
  formatCount,
  formatDateTime,
  formatSize,
} from '../../platform/web/format.ts'
import { csrfInput, type FormState, field, select } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { Folder } from '../folders/folders.repository.ts'
import { DEFAULT_FILE_ORDER, type FileOrder } from './file-order.ts'
import type { FileShareSummary, StoredFile } from './files.repository.ts'
import { SHARE_PATHS, SHARE_STATE_TEXT } from './share-panel.views.ts'

/** The app's addresses of files and folders. */
export const FILE_PATHS = {
  home: '/',
  folder: (id: string) => `/folders/${id}`,
  folders: '/folders',
  renameFolder: (id: string) => `/folders/${id}/rename`,
  deleteFolder: (id: string) => `/folders/${id}/delete`,
  folderZip: (id: string) => `/folders/${id}/zip`,
  file: (id: string) => `/files/${id}`,
  download: (id: string) => `/files/${id}/download`,
  inline: (id: string) => `/files/${id}/download?disposition=inline`,
  preview: (id: string) => `/files/${id}/preview`,
  rename: (id: string) => `/files/${id}/rename`,
  move: (id: string) => `/files/${id}/move`,
  delete: (id: string) => `/files/${id}/delete`,
  bulk: '/files/bulk',
  rows: '/files/rows',
  zip: '/files/zip',
  uploads: '/uploads',
  trash: '/trash',
  emptyTrash: '/trash/empty',
  /** Restores the files named in the form (`fileIds`): a row's Restore in the trash, and the Undo after a delete. */
  restore: '/trash/restore',
  deleteForever: (id: string) => `/trash/${id}/delete`,
} as const

/** How many folders the sidebar and the folder menus list, by name; the folders page lists them all. */
export const FOLDERS_SHOWN = 200

/** What the uploader needs to know (files-app.client.ts reads it from the page). */
export interface UploaderSettings {
  blobApiUrl: string
  maxFileSize: number
  multipartThreshold: number
  filesPerPreparation: number
}

export interface FilesPageData {
  nav: AppNav
  csrfToken: string
  /** The folder in view; null for every file. */
  folder: Folder | null
  /** The account's folders by name, at most FOLDERS_SHOWN. */
  folders: Folder[]
  query: string | undefined
  /** The list's order, kept in its address (`?sort=`); a search's is newest first. */
  order: FileOrder
  files: StoredFile[]
  nextCursor: string | null
  /** The cursor of the page before this one; null on the first. */
  prevCursor: string | null
  /** The place of this page's first file in the list (1 on the first page), kept in the address (`?from=`). */
  from: number
  /** Files a page holds at most: the page before this one starts that much earlier. */
  pageSize: number
  uploader: UploaderSettings
  /** A fixed sentence after a change ("3 files deleted."). */
  notice?: string
  /** The files a delete just moved to the trash, for the notice's Undo. */
  undo?: string[]
  /** How many days a deleted file stays in the trash; 0: deletes are final, and there is no trash to link to. */
  trashDays: number
  /** The folder form's state when a new name was refused. */
  folderForm?: { name: string; error: string }
  /** The folder's share link, if it has one, and its Share panel (share-panel.views.ts); only on a folder's page. */
  folderShare?: { link: FileShareSummary | null; panel: string }
}

export const ICONS = {
  upload: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 16V5m0 0-4.5 4.5M12 5l4.5 4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`,
  download: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 4v11m0 0-4.5-4.5M12 15l4.5-4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`,
  files: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M7 3.5h7l4.5 4.5v11a1.5 1.5 0 0 1-1.5 1.5H7A1.5 1.5 0 0 1 5.5 19V5A1.5 1.5 0 0 1 7 3.5Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/><path d="M14 3.5V8h4.5" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></svg>`,
  search: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><circle cx="11" cy="11" r="6.5" fill="none" stroke="currentColor" stroke-width="2"/><path d="m16 16 4 4" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`,
  trash: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4.5 7h15M9.5 7V4.5h5V7m-8 0 .9 12.1a1.5 1.5 0 0 0 1.5 1.4h6.2a1.5 1.5 0 0 0 1.5-1.4L17.5 7M10 11v6m4-6v6" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round"/></svg>`,
  plus: html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 5v14M5 12h14" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`,
} as const

/**
 * The icons a files page repeats on every row and folder (a list of 50 files beside 100 folders drew 150 of
 * them, 40 KB of the page's 100 KB), defined once at the top of the page and drawn with `<use>`; the rows that
 * the page's script adds find them there too. The sheet's colours are inherited from the `.type-icon` that
 * uses it, as the document's selectors do not reach inside a `<use>`.
 */
export const REPEATED_ICONS = html`<svg class="icon-sprite" aria-hidden="true" focusable="false">
<symbol id="icon-folder" viewBox="0 0 24 24"><path d="M3.5 7.5a2 2 0 0 1 2-2h4l2 2.2h7a2 2 0 0 1 2 2v7.8a2 2 0 0 1-2 2h-13a2 2 0 0 1-2-2Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></symbol>
<symbol id="icon-link" viewBox="0 0 24 24"><path d="M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></symbol>
<symbol id="icon-sheet" viewBox="0 0 40 48"><path d="M5 2h21l10 10v32a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2z"/><path d="M26 2v8a2 2 0 0 0 2 2h8" fill="none"/></symbol>
</svg>`

const repeatedIcon = (id: 'folder' | 'link') =>
  html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><use href="#icon-${id}"/></svg>`

/** The family a type belongs to, for the colour of its icon. */
function family(contentType: string, name: string): string {
  const type = contentType.toLowerCase()
  if (type.startsWith('image/')) return 'image'
  if (type.startsWith('video/')) return 'video'
  if (type.startsWith('audio/')) return 'audio'
  if (type === 'application/pdf') return 'pdf'
  if (/zip|tar|gzip|compressed|rar/.test(type) || /\.(zip|tar|gz|tgz|7z|rar)$/i.test(name)) return 'archive'
  if (type.startsWith('text/') || type.includes('json') || type.includes('xml')) return 'text'
  return 'other'
}

/** A small icon of a file without a preview: a sheet with its extension, tinted by family. */
export function typeIcon(file: Pick<StoredFile, 'name' | 'contentType'>): string {
  // The small sheet has room for four letters.
  const label = extensionLabel(file.name).slice(0, 4)
  return html`<svg class="type-icon type-${family(file.contentType, file.name)}" viewBox="0 0 40 48" aria-hidden="true" focusable="false"><use href="#icon-sheet"/>!${label ? html`<text x="19.5" y="36" text-anchor="middle">${label}</text>` : ''}</svg>`
}

/** The thumbnail of a file: its image preview when it has one, or its type's icon. */
export function thumbnail(file: StoredFile): string {
  if (file.preview) {
    return html`<img class="thumb" src="${FILE_PATHS.preview(file.id)}" alt="" width="44" height="44" loading="lazy" decoding="async">`
  }
  return html`<span class="thumb">!${typeIcon(file)}</span>`
}

/** The share link's state in a few words, with its counts. */
export function shareBadge(share: StoredFile['share']): string {
  if (!share) return html`<span class="muted">Not shared</span>`
  const counts = html`<span class="share-counts"><span>${formatCount(share.viewCount)} view${share.viewCount === 1 ? '' : 's'}</span> <span>${formatCount(share.downloadCount)} download${share.downloadCount === 1 ? '' : 's'}</span></span>`
  return share.state === 'active'
    ? html`<span class="badge badge-on">!${repeatedIcon('link')}Shared</span> !${counts}`
    : html`<span class="badge" title="${SHARE_STATE_TEXT[share.state].label}">${SHARE_STATE_TEXT[share.state].short}</span> !${counts}`
}

/** When a file was added, to the minute: files added the same day are told apart. */
const dateTime = (ms: number) =>
  html`<time datetime="${new Date(ms).toISOString()}" data-local>${formatDateTime(ms)}</time>`

/** One file in a list: select box, thumbnail, name (a link to its page), size, date, folder, share. */
export function fileRow(file: StoredFile): string {
  const checkboxId = `select-${file.id}`
  return html`<tr data-file-id="${file.id}">
<td class="col-select"><input type="checkbox" name="fileIds" value="${file.id}" id="${checkboxId}" aria-label="Select ${file.name}"></td>
<td class="col-name"><div class="file-cell">!${thumbnail(file)}<div class="file-cell-text"><a class="file-link" href="${FILE_PATHS.file(file.id)}">${file.name}</a>
<span class="file-sub">${describeType(file.contentType)} · ${formatSize(file.size)}!${file.share?.state === 'active' ? ' · Shared' : ''}</span></div></div></td>
<td class="col-size">${formatSize(file.size)}</td>
<td class="col-date">!${dateTime(file.createdAt)}</td>
<td class="col-folder">!${file.folder ? html`<a href="${FILE_PATHS.folder(file.folder.id)}">${file.folder.name}</a>` : html`<span class="muted">&#8212;</span>`}</td>
<td class="col-share">!${shareBadge(file.share)}</td>
</tr>`
}

/** The folders beside the list: every file, then each folder with its count, and a form for a new one. */
function folderSidebar(data: FilesPageData): string {
  const current = data.folder?.id
  const link = (href: string, label: string, count: string, selected: boolean, icon: string) =>
    html`<li><a href="${href}"!${selected ? ' aria-current="page"' : ''}>!${icon}<span class="folder-name">${label}</span>!${count ? html`<span class="count">${count}</span>` : ''}</a></li>`
  const form = data.folderForm
  return html`<nav class="folder-nav" aria-labelledby="folders-title">
<h2 id="folders-title" class="sidebar-title">Folders</h2>
<ul>
!${link(FILE_PATHS.home, 'All files', '', current === undefined, ICONS.files)}
!${data.folders.map((folder) =>
    link(
      FILE_PATHS.folder(folder.id),
      folder.name,
      formatCount(folder.fileCount),
      folder.id === current,
      repeatedIcon('folder'),
    ),
  )}
</ul>
!${data.folders.length >= FOLDERS_SHOWN ? html`<p class="sidebar-more"><a href="${FILE_PATHS.folders}">All folders</a></p>` : ''}
!${data.trashDays > 0 ? html`<ul class="trash-nav"><li><a href="${FILE_PATHS.trash}">!${ICONS.trash}<span>Trash</span></a></li></ul>` : ''}
<details class="new-folder"!${form ? ' open' : ''}>
<summary>!${ICONS.plus}New folder</summary>
<form method="post" action="${FILE_PATHS.folders}" novalidate>
!${csrfInput(data.csrfToken)}
<div class="field">
<label for="new-folder-name">Name</label>
<input id="new-folder-name" name="name" maxlength="100" required autocomplete="off" value="${form?.name ?? ''}"!${form ? html` aria-invalid="true" aria-describedby="new-folder-error"` : ''}>
!${form ? html`<p class="field-error" id="new-folder-error">${form.error}</p>` : ''}
</div>
<button class="button small primary" type="submit">Create folder</button>
</form>
</details>
</nav>`
}

/**
 * The folder's share action beside its other actions: Share folder makes its link at once (the panel below the
 * list then shows it, the page scrolled to it); once it has one, a link down to the panel, with its state.
 */
function folderShareAction(folderId: string, link: FileShareSummary | null, csrfToken: string): string {
  if (!link) {
    return html`<form method="post" action="${SHARE_PATHS.folder.create(folderId)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button small primary" type="submit">!${repeatedIcon('link')}Share folder</button></form>`
  }
  const state = SHARE_STATE_TEXT[link.state]
  return html`<a class="button small folder-share-state!${state.working ? ' is-on' : ''}" href="#share">!${repeatedIcon('link')}<span class="sr-only">Folder share link: </span>${state.working ? 'Shared' : state.short}</a>`
}

/** Where the list is: every file or a folder, searched or not; with a folder's own actions. */
function listHeading(data: FilesPageData): string {
  const { folder, query } = data
  const title = folder ? folder.name : 'All files'
  const searching = query
    ? html`<p class="list-context" role="status">Files named like &#8220;${query}&#8221;!${folder ? html` in ${folder.name}` : ''}. <a href="${folder ? FILE_PATHS.folder(folder.id) : FILE_PATHS.home}">Clear the search</a></p>`
    : ''
  const folderActions = folder
    ? html`<div class="folder-actions">
!${data.folderShare ? folderShareAction(folder.id, data.folderShare.link, data.csrfToken) : ''}
<a class="button small" href="${FILE_PATHS.folderZip(folder.id)}">!${ICONS.download}Download folder (zip)</a>
<a class="button small" href="${FILE_PATHS.renameFolder(folder.id)}">Rename</a>
<a class="button small danger" href="${FILE_PATHS.deleteFolder(folder.id)}">Delete folder</a>
</div>`
    : ''
  return html`<div class="list-head">
<div><h1 id="page-title">${title}</h1>
!${folder ? html`<p class="muted list-counts">${formatCount(folder.fileCount)} file${folder.fileCount === 1 ? '' : 's'}!${folder.requestCount > 0 ? html` · ${formatCount(folder.requestCount)} file request${folder.requestCount === 1 ? '' : 's'}` : ''}</p>` : ''}</div>
!${folderActions}
</div>
!${searching}`
}

/** The search box, submitted as a GET so that results have an address. */
function searchForm(data: FilesPageData): string {
  const action = data.folder ? FILE_PATHS.folder(data.folder.id) : FILE_PATHS.home
  const label = data.folder ? `Search in ${data.folder.name}` : 'Search files'
  return html`<form class="search" method="get" action="${action}" role="search">
<label class="sr-only" for="search">${label}</label>
<span class="search-box">!${ICONS.search}<input id="search" type="search" name="query" value="${data.query ?? ''}" placeholder="${label}" maxlength="200" autocomplete="off"></span>
<button class="button" type="submit">Search</button>
</form>`
}

/** The uploader: hidden until its module runs, since sending bytes needs scripts. */
function uploader(data: FilesPageData): string {
  const { uploader: settings, folder } = data
  const where = folder ? folder.name : 'All files'
  return html`<section class="uploader" aria-label="Uploads" data-uploader hidden
 data-blob-api="${settings.blobApiUrl}"
 data-max-file-size="${settings.maxFileSize}"
 data-multipart-threshold="${settings.multipartThreshold}"
 data-per-preparation="${settings.filesPerPreparation}"
 data-folder-id="${folder?.id ?? ''}"
 data-folder-name="${where}"
 data-account="${data.nav.email}"
 data-csrf="${data.csrfToken}">
<div class="upload-bar">
<label class="button primary" for="upload-input">!${ICONS.upload}Upload files</label>
<input id="upload-input" class="sr-only" type="file" multiple>
<p class="muted upload-hint">or drop files anywhere on this page. They go to <strong>${where}</strong>; up to ${formatSize(settings.maxFileSize)} each.</p>
<button class="button small upload-clear" type="button" data-upload-clear hidden>Clear finished</button>
</div>
<ul class="file-list" data-upload-list aria-label="Files being uploaded"></ul>
<p class="sr-only" role="status" aria-live="polite" data-upload-announce></p>
</section>
<noscript><p class="inline-notice">Uploading from this page needs JavaScript. Everything else works without it.</p></noscript>
<div class="drop-overlay" data-drop-overlay hidden><p>!${ICONS.upload}Drop to upload to ${where}</p></div>`
}

/**
 * The bar of actions on the files selected: move (to any other folder than the one shown), download as one zip,
 * delete. With scripts it shows only while files are selected (files-app.client.ts).
 */
function bulkBar(data: FilesPageData): string {
  return html`<div class="bulk-bar" data-bulk-bar>
<p class="bulk-count" data-selected-count aria-live="polite">Select files to move, download or delete several at once.</p>
<div class="bulk-actions">
<label class="sr-only" for="bulk-folder">Move the selected files to</label>
<select id="bulk-folder" name="folderId">
<option value="">All files (no folder)</option>
!${data.folders.filter((folder) => folder.id !== data.folder?.id).map((folder) => html`<option value="${folder.id}">${folder.name}</option>`)}
</select>
<button class="button small" type="submit" name="action" value="move">Move</button>
<button class="button small" type="submit" name="action" value="zip" formaction="${FILE_PATHS.zip}">!${ICONS.download}Download as zip</button>
<button class="button small danger" type="submit" name="action" value="delete">Delete&#8230;</button>
</div>
</div>`
}

function emptyState(data: FilesPageData): string {
  if (data.query) {
    return html`<div class="empty"><h2>No file is named like &#8220;${data.query}&#8221;</h2><p class="muted">The search matches any part of a name, ignoring case. Try fewer letters.</p></div>`
  }
  if (data.folder) {
    return html`<div class="empty"><h2>This folder is empty</h2><p class="muted">Upload files here, or move files into it from All files.</p></div>`
  }
  return html`<div class="empty"><h2>No files yet</h2><p class="muted">Upload your first files: choose them with Upload files, or drop them on this page. Then share them with a link, or ask others to send you files with a file request.</p></div>`
}

/** How each order reads in the table's caption. */
const ORDER_WORDS: Record<FileOrder, string> = {
  newest: 'newest first',
  oldest: 'oldest first',
  name: 'by name, A to Z',
  'name-desc': 'by name, Z to A',
  largest: 'largest first',
  smallest: 'smallest first',
}

/** A column the list can be ordered by: its first order, and the one a second click gives. */
const SORTABLE: Record<'name' | 'size' | 'date', [FileOrder, FileOrder]> = {
  name: ['name', 'name-desc'],
  size: ['largest', 'smallest'],
  date: ['newest', 'oldest'],
}

/**
 * A column's heading: a link that orders the list by it (again: the other way), with `aria-sort` on the column
 * the list is ordered by. A search's results come newest first only: their headings are plain.
 */
function sortHeading(
  data: FilesPageData,
  column: keyof typeof SORTABLE,
  label: string,
  className: string,
): string {
  const [first, second] = SORTABLE[column]
  const current = data.order === first || data.order === second
  const ascending = data.order === 'name' || data.order === 'oldest' || data.order === 'smallest'
  const sort = current ? html` aria-sort="${ascending ? 'ascending' : 'descending'}"` : ''
  if (data.query) return html`<th class="${className}" scope="col">${label}</th>`
  const next = data.order === first ? second : first
  return html`<th class="${className}" scope="col"!${sort}><a class="sort-link" href="${listHref(data, { sort: next })}">${label}!${current ? html`<span aria-hidden="true"> !${ascending ? '&#8593;' : '&#8595;'}</span>` : ''}</a></th>`
}

/** The address of a page of this list: its folder, search and order, and where the page starts. */
function listHref(
  data: FilesPageData,
  page: { sort?: FileOrder; cursor?: string; before?: string; from?: number },
): string {
  const base = data.folder ? FILE_PATHS.folder(data.folder.id) : FILE_PATHS.home
  const query = new URLSearchParams()
  if (data.query) query.set('query', data.query)
  const sort = page.sort ?? data.order
  if (sort !== DEFAULT_FILE_ORDER) query.set('sort', sort)
  if (page.cursor) query.set('cursor', page.cursor)
  if (page.before) query.set('before', page.before)
  if (page.from && page.from > 1) query.set('from', String(page.from))
  const search = query.toString()
  return search ? `${base}?${search}` : base
}

/** Previous and next, with where this page is in the list ("Files 51–100"). */
function pager(data: FilesPageData): string {
  if (!data.nextCursor && !data.prevCursor) return ''
  const last = data.from + data.files.length - 1
  const previous = data.prevCursor
    ? html`<a class="button" href="${listHref(data, { before: data.prevCursor, from: Math.max(1, data.from - data.pageSize) })}" rel="prev" data-previous>Previous</a>`
    : ''
  const next = data.nextCursor
    ? html`<a class="button" href="${listHref(data, { cursor: data.nextCursor, from: last + 1 })}" rel="next" data-more>More files</a>`
    : ''
  return html`<nav class="pager" aria-label="Pages of files">!${previous}<p class="muted pager-position">Files ${formatCount(data.from)}&#8211;${formatCount(last)}</p>!${next}</nav>`
}

/** The table of files, inside the bulk form; also the target the uploader adds rows to. */
function fileTable(data: FilesPageData, returnTo: string): string {
  return html`<form method="post" action="${FILE_PATHS.bulk}" class="bulk-form" data-bulk-form novalidate>
!${csrfInput(data.csrfToken)}
<input type="hidden" name="return_to" value="${returnTo}">
!${bulkBar(data)}
<div class="table-wrap"!${data.files.length === 0 ? ' hidden' : ''} data-table-wrap>
<table class="file-table">
<caption class="sr-only">${data.folder ? `Files in ${data.folder.name}` : 'Your files'}, ${ORDER_WORDS[data.order]}</caption>
<thead><tr>
<th class="col-select" scope="col"><input type="checkbox" data-select-all aria-label="Select every file shown" hidden></th>
!${sortHeading(data, 'name', 'Name', 'col-name')}
!${sortHeading(data, 'size', 'Size', 'col-size')}
!${sortHeading(data, 'date', 'Added', 'col-date')}
<th class="col-folder" scope="col">Folder</th>
<th class="col-share" scope="col">Sharing</th>
</tr></thead>
<tbody data-file-rows>
!${data.files.map(fileRow)}
</tbody>
</table>
</div>
!${data.files.length === 0 ? emptyState(data) : ''}
</form>
!${pager(data)}`
}

export function filesPage(data: FilesPageData, returnTo: string): Page {
  const title = data.query ? `Search: ${data.query}` : data.folder ? data.folder.name : 'Files'
  const main = html`!${REPEATED_ICONS}<div class="files-app" data-files-app>
!${folderSidebar(data)}
<section class="files-main" aria-labelledby="page-title">
!${data.notice ? notice(data.notice, data.undo && { csrfToken: data.csrfToken, fileIds: data.undo, returnTo }) : ''}
!${listHeading(data)}
<div class="files-tools">
!${searchForm(data)}
</div>
!${uploader(data)}
!${fileTable(data, returnTo)}
!${data.folderShare?.panel ?? ''}
</section>
</div>`
  return { title: `${title} · Coffer`, main, nav: data.nav, scripts: ['files-app.js'] }
}

/**
 * A notice after a change; after a delete into the trash, with an Undo: a small form that restores the files
 * just deleted and comes back here.
 */
function notice(sentence: string, undo?: { csrfToken: string; fileIds: string[]; returnTo: string }): string {
  if (!undo || undo.fileIds.length === 0) return html`<p class="inline-notice" role="status">${sentence}</p>`
  return html`<div class="inline-notice notice-undo" role="status"><p>${sentence}</p>
<form method="post" action="${FILE_PATHS.restore}">
!${csrfInput(undo.csrfToken)}
!${undo.fileIds.map((id) => html`<input type="hidden" name="fileIds" value="${id}">`)}
<input type="hidden" name="return_to" value="${undo.returnTo}">
<button class="button small" type="submit">Undo</button>
</form>
<a href="${FILE_PATHS.trash}">Open the trash</a></div>`
}

/** What a delete does on this server, to `count` files: they move to the trash for `days`, or go for good. */
function whatDeleteDoes(days: number, count: number): string {
  const one = count === 1
  return days > 0
    ? `${one ? 'It moves' : 'They move'} to the trash, where ${one ? 'it' : 'they'} can be restored for ${days} day${days === 1 ? '' : 's'}; after that ${one ? 'it is' : 'they are'} deleted for good, with ${one ? 'its' : 'their'} bytes`
    : `${one ? 'It is' : 'They are'} deleted for good, with ${one ? 'its' : 'their'} bytes`
}

/** The confirmation of a bulk delete: how many, which, and what goes with them. */
export function confirmDeletePage(data: {
  nav: AppNav
  csrfToken: string
  files: StoredFile[]
  returnTo: string
  trashDays: number
}): Page {
  const { files } = data
  const count = files.length
  const shared = files.filter((file) => file.share).length
  const links =
    shared === 0
      ? ''
      : data.trashDays > 0
        ? html`. The share link${shared === 1 ? '' : 's'} of ${shared} of them stop${shared === 1 ? 's' : ''} working until restored`
        : html`, and the share link${shared === 1 ? '' : 's'} of ${shared} of them, which stop${shared === 1 ? 's' : ''} working at once`
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Delete ${count} file${count === 1 ? '' : 's'}?</h1>
<p>${whatDeleteDoes(data.trashDays, count)}!${links}.</p>
<ul class="confirm-list">!${files.slice(0, 20).map((file) => html`<li>${file.name} <span class="muted">(${formatSize(file.size)})</span></li>`)}</ul>
!${count > 20 ? html`<p class="muted">and ${count - 20} more.</p>` : ''}
<form method="post" action="${FILE_PATHS.bulk}">
!${csrfInput(data.csrfToken)}
<input type="hidden" name="return_to" value="${data.returnTo}">
!${files.map((file) => html`<input type="hidden" name="fileIds" value="${file.id}">`)}
<div class="actions">
<button class="button primary danger-fill" type="submit" name="action" value="confirm-delete">Delete ${count} file${count === 1 ? '' : 's'}</button>
<a class="button" href="${data.returnTo}">Cancel</a>
</div>
</form>
</div></section>`
  return { title: `Delete ${count} file${count === 1 ? '' : 's'}? · Coffer`, main, nav: data.nav }
}

export interface FilePageData {
  nav: AppNav
  csrfToken: string
  file: StoredFile
  folders: Folder[]
  viewer: string
  /** The Share panel (share-panel.views.ts). */
  sharePanel: string
  notice?: string
  /** The rename form shown again with its problem. */
  renameForm?: FormState
}

/** A file's own page: how it looks, what it is, what can be done with it, and its share link. */
export function filePage(data: FilePageData): Page {
  const { file } = data
  const created = new Date(file.createdAt).toISOString()
  const renameForm = data.renameForm ?? { values: { name: file.name } }
  const details = html`<dl class="details">
<div><dt>Type</dt><dd title="${file.contentType}">${describeType(file.contentType)}</dd></div>
<div><dt>Size</dt><dd>${formatSize(file.size)}!${file.size >= 1000 ? html` <span class="muted">(${formatCount(file.size)} bytes)</span>` : ''}</dd></div>
<div><dt>Added</dt><dd><time datetime="${created}" data-local>${formatDateTime(file.createdAt)}</time></dd></div>
<div><dt>Folder</dt><dd>!${file.folder ? html`<a href="${FILE_PATHS.folder(file.folder.id)}">${file.folder.name}</a>` : 'None (All files)'}</dd></div>
!${file.sha256 ? html`<div><dt>SHA-256</dt><dd><code class="hash">${file.sha256}</code></dd></div>` : ''}
</dl>`
  const actions = html`<div class="file-actions">
<details class="action"!${data.renameForm ? ' open' : ''}><summary class="button">Rename</summary>
<form method="post" action="${FILE_PATHS.rename(file.id)}" novalidate>
!${csrfInput(data.csrfToken)}
!${field(renameForm, { name: 'name', label: 'New name', maxLength: 255 })}
<button class="button primary small" type="submit">Save name</button>
</form></details>
<details class="action"><summary class="button">Move</summary>
<form method="post" action="${FILE_PATHS.move(file.id)}">
!${csrfInput(data.csrfToken)}
!${select(undefined, {
    name: 'folderId',
    label: 'Move to',
    required: false,
    selected: file.folderId ?? '',
    choices: [
      { value: '', label: 'All files (no folder)' },
      ...data.folders.map((folder) => ({ value: folder.id, label: folder.name })),
    ],
  })}
<button class="button primary small" type="submit">Move</button>
</form></details>
<a class="button danger" href="${FILE_PATHS.delete(file.id)}">Delete&#8230;</a>
</div>`
  const main = html`<div class="file-page">
<nav class="crumbs" aria-label="Breadcrumb"><ol><li><a href="${FILE_PATHS.home}">All files</a></li>!${file.folder ? html`<li><a href="${FILE_PATHS.folder(file.folder.id)}">${file.folder.name}</a></li>` : ''}<li><span aria-current="page">${file.name}</span></li></ol></nav>
!${data.notice ? html`<p class="inline-notice" role="status">${data.notice}</p>` : ''}
<div class="file-title">
<h1 id="page-title">${file.name}</h1>
<a class="button primary" href="${FILE_PATHS.download(file.id)}" download>!${ICONS.download}Download</a>
</div>
<div class="file-layout">
<section class="card file-view" aria-label="Preview">!${data.viewer}</section>
<section class="card" aria-labelledby="details-title"><div class="card-body">
<h2 id="details-title">Details</h2>
!${details}
!${actions}
</div></section>
</div>
!${data.sharePanel}
</div>`
  return { title: `${file.name} · Coffer`, main, nav: data.nav }
}

/** The confirmation of deleting one file. */
export function confirmDeleteFilePage(data: {
  nav: AppNav
  csrfToken: string
  file: StoredFile
  trashDays: number
}): Page {
  const { file } = data
  const counts = file.share
    ? `(${formatCount(file.share.viewCount)} views, ${formatCount(file.share.downloadCount)} downloads so far)`
    : ''
  const link = !file.share
    ? ''
    : data.trashDays > 0
      ? html`. Its share link stops working until it is restored ${counts}`
      : html`, and its share link stops working at once ${counts}`
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Delete &#8220;${file.name}&#8221;?</h1>
<p>${whatDeleteDoes(data.trashDays, 1)}!${link}.</p>
<form method="post" action="${FILE_PATHS.delete(file.id)}">
!${csrfInput(data.csrfToken)}
<div class="actions"><button class="button primary danger-fill" type="submit">Delete the file</button><a class="button" href="${FILE_PATHS.file(file.id)}">Cancel</a></div>
</form>
</div></section>`
  return { title: `Delete ${file.name}? · Coffer`, main, nav: data.nav }
}
