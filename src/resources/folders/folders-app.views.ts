// The folder pages of the web app: every folder, a new folder, renaming one, and the confirmation of a
// deletion that says where its files and requests go. A folder's files are shown by the files page
// (/folders/{id}, files-app.views.ts). Names are text: they go through ghtml's escaping `${…}`.
import { html } from 'ghtml'
import { formatCount } from '../../platform/web/format.ts'
import { csrfInput, type FormState, field, formError } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { Folder } from './folders.repository.ts'

export const FOLDER_PATHS = {
  list: '/folders',
  create: '/folders',
  new: '/folders/new',
  view: (id: string) => `/folders/${id}`,
  rename: (id: string) => `/folders/${id}/rename`,
  delete: (id: string) => `/folders/${id}/delete`,
} as const

/** The longest folder name (the API's bound). */
export const FOLDER_NAME_MAX = 80

const count = (n: number, one: string, many: string) => `${formatCount(n)} ${n === 1 ? one : many}`

function card(title: string, body: string): string {
  return html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">${title}</h1>
!${body}
</div></section>`
}

function nameField(state: FormState | undefined): string {
  return field(state, {
    name: 'name',
    label: 'Name',
    maxLength: FOLDER_NAME_MAX,
    hint: 'Unique among your folders, ignoring case.',
  })
}

export function newFolderPage(data: { nav: AppNav; csrfToken: string; form?: FormState }): Page {
  const body = html`<form method="post" action="${FOLDER_PATHS.create}" novalidate>
!${csrfInput(data.csrfToken)}
!${formError(data.form)}
!${nameField(data.form)}
<div class="actions"><button class="button primary" type="submit">Create folder</button><a class="button" href="${FOLDER_PATHS.list}">Cancel</a></div>
</form>`
  return { title: 'New folder · Coffer', main: card('New folder', body), nav: data.nav }
}

export function renameFolderPage(data: {
  nav: AppNav
  csrfToken: string
  folder: Folder
  form?: FormState
}): Page {
  const { folder } = data
  const form = data.form ?? { values: { name: folder.name } }
  const body = html`<form method="post" action="${FOLDER_PATHS.rename(folder.id)}" novalidate>
!${csrfInput(data.csrfToken)}
!${formError(form)}
!${nameField(form)}
<div class="actions"><button class="button primary" type="submit">Rename</button><a class="button" href="${FOLDER_PATHS.view(folder.id)}">Cancel</a></div>
</form>`
  return {
    title: `Rename ${folder.name} · Coffer`,
    main: card(`Rename “${folder.name}”`, body),
    nav: data.nav,
  }
}

/** What deleting the folder does to its own share link, if it has one: the link goes with it. */
function folderLinkGoes(link: FolderLinkCounts | null | undefined): string {
  if (!link) return ''
  return html`<p>The folder&#8217;s own share link is deleted with it and stops working for good (${count(link.viewCount, 'view', 'views')}, ${count(link.downloadCount, 'download', 'downloads')} so far).</p>`
}

/** The counts of a folder's share link, as the delete confirmation names them. */
export interface FolderLinkCounts {
  viewCount: number
  downloadCount: number
}

export function deleteFolderPage(data: {
  nav: AppNav
  csrfToken: string
  folder: Folder
  /** The folder's share link, if it has one. */
  link?: FolderLinkCounts | null
}): Page {
  const { folder } = data
  const moving = [
    folder.fileCount > 0 ? count(folder.fileCount, 'file', 'files') : '',
    folder.requestCount > 0 ? count(folder.requestCount, 'file request', 'file requests') : '',
  ].filter(Boolean)
  const body = html`<p>!${
    moving.length > 0
      ? html`Only the folder is deleted: its ${moving.join(' and ')} move${folder.fileCount + folder.requestCount === 1 ? 's' : ''} to All files, and nothing else changes (!${data.link ? 'the files&#8217; ' : ''}share links and file requests keep working).`
      : html`The folder is empty!${data.link ? '.' : '; nothing else changes.'}`
  }</p>
!${folderLinkGoes(data.link)}
<form method="post" action="${FOLDER_PATHS.delete(folder.id)}">
!${csrfInput(data.csrfToken)}
<div class="actions"><button class="button primary danger-fill" type="submit">Delete the folder</button><a class="button" href="${FOLDER_PATHS.view(folder.id)}">Cancel</a></div>
</form>`
  return {
    title: `Delete ${folder.name}? · Coffer`,
    main: card(`Delete “${folder.name}”?`, body),
    nav: data.nav,
  }
}

export function foldersPage(data: { nav: AppNav; folders: Folder[]; nextCursor: string | null }): Page {
  const { folders } = data
  const list =
    folders.length === 0
      ? html`<div class="empty"><h2>No folders yet</h2><p class="muted">Folders keep files and file requests together. Make one for a project, a client or a year.</p></div>`
      : html`<ul class="items" aria-label="Your folders">!${folders.map(
          (folder) => html`<li class="item">
<div class="item-main"><p class="item-title"><a href="${FOLDER_PATHS.view(folder.id)}">${folder.name}</a></p>
<p class="item-meta">${count(folder.fileCount, 'file', 'files')} · ${count(folder.requestCount, 'file request', 'file requests')}</p></div>
<div class="actions"><a class="button small" href="${FOLDER_PATHS.rename(folder.id)}" aria-label="Rename ${folder.name}">Rename</a><a class="button small danger" href="${FOLDER_PATHS.delete(folder.id)}" aria-label="Delete ${folder.name}">Delete</a></div>
</li>`,
        )}</ul>`
  const more = data.nextCursor
    ? html`<p class="more"><a class="button" href="${FOLDER_PATHS.list}?cursor=${encodeURIComponent(data.nextCursor)}">More folders</a></p>`
    : ''
  const main = html`<section class="card" aria-labelledby="page-title"><div class="card-body">
<div class="list-head"><h1 id="page-title">Folders</h1><a class="button primary" href="${FOLDER_PATHS.new}">New folder</a></div>
<p class="muted">Newest first.</p>
!${list}
!${more}
</div></section>`
  return { title: 'Folders · Coffer', main, nav: data.nav }
}
