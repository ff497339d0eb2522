// The owner's trash in the web app: the files deleted last first, each with when it was deleted, when it goes
// for good, and its Restore and Delete forever (behind a confirmation); the trash's size; Empty trash behind a
// confirmation. With a
// retention of 0 there is no trash, and the page says so. Names are text: they go through ghtml's escaping
// `${…}`; `!${…}` only inserts fragments made here. Characters beyond Latin-1 are character references, as in
// files-app.views.ts.
import { html } from 'ghtml'
import { formatSize } from '../../platform/format-size.shared.ts'
import { describeType, formatCount, formatDate, formatDateTime } from '../../platform/web/format.ts'
import { csrfInput } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { TrashedFile } from './files.repository.ts'
import { FILE_PATHS, REPEATED_ICONS, typeIcon } from './files-app.views.ts'

const DAY_MS = 86_400_000

const files = (n: number) => `${formatCount(n)} file${n === 1 ? '' : 's'}`

/** How long until the file goes for good, as a person counts it: "in 12 days", "within a day". */
export function untilPurge(purgeAt: number, now: number): string {
  const left = purgeAt - now
  if (left <= DAY_MS) return 'within a day'
  // A file deleted a moment ago with 30 days to go reads "in 30 days", as the rule above it says.
  return `in ${Math.ceil(left / DAY_MS)} days`
}

export interface TrashPageData {
  nav: AppNav
  csrfToken: string
  /** How many days a deleted file stays in the trash; 0: deletes are final. */
  retentionDays: number
  files: TrashedFile[]
  size: { files: number; bytes: number }
  nextCursor: string | null
  /** Whether this is a later page (its address has a cursor). */
  later: boolean
  /** Where the forms come back to: this page's address. */
  returnTo: string
  notice?: string
  now: number
}

function trashRow(data: TrashPageData, file: TrashedFile): string {
  const deleted = new Date(file.trashedAt).toISOString()
  const purge = new Date(file.purgeAt).toISOString()
  return html`<li class="item trash-item" data-file-id="${file.id}">
<span class="thumb">!${typeIcon(file)}</span>
<div class="item-main"><p class="item-title">${file.name}</p>
<p class="item-meta">${describeType(file.contentType)} &#183; ${formatSize(file.size)} &#183; from !${file.folder ? html`${file.folder.name}` : 'All files'}</p>
<dl class="item-dates">
<div><dt>Deleted</dt><dd><time datetime="${deleted}" data-local>${formatDateTime(file.trashedAt)}</time></dd></div>
<div><dt>Deleted for good</dt><dd><time datetime="${purge}">${formatDate(file.purgeAt)}</time> (${untilPurge(file.purgeAt, data.now)})</dd></div>
</dl></div>
<div class="actions">
<form method="post" action="${FILE_PATHS.restore}">
!${csrfInput(data.csrfToken)}
<input type="hidden" name="fileIds" value="${file.id}">
<input type="hidden" name="return_to" value="${data.returnTo}">
<button class="button small" type="submit" aria-label="Restore ${file.name}">Restore</button>
</form>
<a class="button small danger" href="${FILE_PATHS.deleteForever(file.id)}" aria-label="Delete ${file.name} forever&#8230;">Delete forever&#8230;</a>
</div>
</li>`
}

function emptyState(data: TrashPageData): string {
  if (data.retentionDays === 0) {
    return html`<div class="empty"><h2>There is no trash on this server</h2><p class="muted">Deletes are final here: a deleted file is gone for good at once, with its bytes and share link.</p></div>`
  }
  if (data.later) {
    return html`<div class="empty"><h2>No more files in the trash</h2><p class="muted"><a href="${FILE_PATHS.trash}">Back to the files deleted last</a></p></div>`
  }
  return html`<div class="empty"><h2>The trash is empty</h2><p class="muted">Files you delete wait here for ${data.retentionDays} day${data.retentionDays === 1 ? '' : 's'}, in case you want them back.</p></div>`
}

export function trashPage(data: TrashPageData): Page {
  const { size, retentionDays } = data
  const rule =
    retentionDays > 0
      ? html`Deleted files stay here for ${retentionDays} day${retentionDays === 1 ? '' : 's'}, then are deleted for good. Restore puts a file back in its folder, with its share link as it was.`
      : html`Deletes are final on this server: there is no trash.`
  const summary =
    size.files > 0
      ? html`<p class="trash-size" data-trash-size><strong>${files(size.files)}</strong>, ${formatSize(size.bytes)}</p>`
      : ''
  const pager =
    data.nextCursor || data.later
      ? html`<nav class="pager" aria-label="Pages of the trash">!${data.later ? html`<a class="button" href="${FILE_PATHS.trash}">Deleted last</a>` : ''}!${data.nextCursor ? html`<a class="button" href="${FILE_PATHS.trash}?cursor=${encodeURIComponent(data.nextCursor)}" rel="next" data-more>More files</a>` : ''}</nav>`
      : ''
  const main = html`!${REPEATED_ICONS}<div class="trash-page">
<nav class="crumbs" aria-label="Breadcrumb"><ol><li><a href="${FILE_PATHS.home}">All files</a></li><li><span aria-current="page">Trash</span></li></ol></nav>
!${data.notice ? html`<p class="inline-notice" role="status">${data.notice}</p>` : ''}
<section class="card" aria-labelledby="page-title"><div class="card-body">
<div class="list-head"><div><h1 id="page-title">Trash</h1>!${summary}</div>
!${size.files > 0 ? html`<a class="button danger" href="${FILE_PATHS.emptyTrash}">Empty trash&#8230;</a>` : ''}</div>
!${retentionDays > 0 || data.files.length > 0 ? html`<p class="muted trash-rule">!${rule}</p>` : ''}
!${data.files.length > 0 ? html`<ul class="items" aria-label="Files in the trash, deleted last first">!${data.files.map((file) => trashRow(data, file))}</ul>` : emptyState(data)}
!${pager}
</div></section>
</div>`
  return { title: 'Trash · Coffer', main, nav: data.nav }
}

/** The confirmation of emptying the trash: how many files and bytes go for good. */
export function confirmEmptyPage(data: {
  nav: AppNav
  csrfToken: string
  size: { files: number; bytes: number }
}): Page {
  const { size } = data
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Empty the trash?</h1>
<p>The ${files(size.files)} in the trash (${formatSize(size.bytes)}) !${size.files === 1 ? 'is deleted for good, with its bytes and share link' : 'are deleted for good, with their bytes and share links'}. This cannot be undone.</p>
<form method="post" action="${FILE_PATHS.emptyTrash}">
!${csrfInput(data.csrfToken)}
<div class="actions"><button class="button primary danger-fill" type="submit">Empty trash</button><a class="button" href="${FILE_PATHS.trash}">Cancel</a></div>
</form>
</div></section>`
  return { title: 'Empty the trash? · Coffer', main, nav: data.nav }
}

/** The confirmation of deleting one file in the trash for good: which file, and that it cannot be undone. */
export function confirmDeleteForeverPage(data: { nav: AppNav; csrfToken: string; file: TrashedFile }): Page {
  const { file } = data
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Delete forever?</h1>
<p><strong>${file.name}</strong> (${formatSize(file.size)}) is deleted for good, with its bytes!${file.share ? ' and its share link' : ''}. This cannot be undone.</p>
<form method="post" action="${FILE_PATHS.deleteForever(file.id)}">
!${csrfInput(data.csrfToken)}
<div class="actions"><button class="button primary danger-fill" type="submit">Delete forever</button><a class="button" href="${FILE_PATHS.trash}">Cancel</a></div>
</form>
</div></section>`
  return { title: 'Delete forever? · Coffer', main, nav: data.nav }
}
