// What the public page of a folder link shows: the folder's name, Download all (one zip of every file), a Copy
// link button, and the folder's files as they are now, newest first, each with its preview or type icon, name
// (a link to the file's page), type, size and date, and a download button; More files for the next page. Every
// text that came from a user (the folder's and files' names) goes through ghtml's escaping `${…}`; `!${…}` only
// inserts fragments made here.
import { html } from 'ghtml'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { describeType, formatCount, formatDateTime, formatSize } from '../../platform/web/format.ts'
import type { Page } from '../../platform/web/layout.ts'
import type { FilePage, StoredFile } from '../files/files.repository.ts'
import { REPEATED_ICONS, typeIcon } from '../files/files-app.views.ts'
import type { PublicFolderLink } from './public-shares.service.ts'
import { folderLinkPaths } from './share-pages.views.ts'

const FOLDER_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M3.5 7.5a2 2 0 0 1 2-2h4l2 2.2h7a2 2 0 0 1 2 2v7.8a2 2 0 0 1-2 2h-13a2 2 0 0 1-2-2Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></svg>`
const DOWNLOAD_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 4v11m0 0-4.5-4.5M12 15l4.5-4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`
const LINK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`

/** One file of the folder: a link to its page, what it is, and its download. */
function fileItem(publicId: string, file: StoredFile): string {
  const paths = folderLinkPaths(publicId).file(file.id)
  const thumb = file.preview
    ? html`<img class="thumb" src="${paths.preview}" alt="" width="44" height="44" loading="lazy" decoding="async">`
    : html`<span class="thumb">!${typeIcon(file)}</span>`
  const added = html`<time datetime="${new Date(file.createdAt).toISOString()}" data-local>${formatDateTime(file.createdAt)}</time>`
  return html`<li class="shared-file">!${thumb}<div class="shared-file-text"><a class="file-link" href="${paths.page}">${file.name}</a>
<span class="muted shared-file-about">${describeType(file.contentType)} · ${formatSize(file.size)} · !${added}</span></div>
<a class="button small" href="${paths.download}" title="Download ${file.name}">!${DOWNLOAD_ICON}<span class="sr-only">Download ${file.name}</span></a></li>`
}

/**
 * What the list holds, in words: every file of the folder when it fits on one page ("3 files, newest first."),
 * otherwise this page's share of them.
 */
function listWords(files: FilePage<StoredFile>, paged: boolean): string {
  const count = files.items.length
  if (count === 0) return ''
  if (!paged && !files.nextCursor)
    return html`${formatCount(count)} file${count === 1 ? '' : 's'}, newest first.`
  return html`Files are listed newest first; ${formatCount(count)} on this page.`
}

/** The page of a working folder link, once any password has been given: a page of its files. */
export function folderLinkPage(
  link: PublicFolderLink,
  files: FilePage<StoredFile>,
  options: { urls: PublicUrls; paged: boolean },
): Page {
  const paths = folderLinkPaths(link.publicId)
  const { name } = link.folder
  const list =
    files.items.length > 0
      ? html`<ul class="shared-files" aria-label="Files in ${name}">!${files.items.map((file) => fileItem(link.publicId, file))}</ul>`
      : html`<div class="empty shared-files-empty"><p>${options.paged ? 'No more files in this folder.' : 'This folder is empty for now.'}</p></div>`
  const more = files.nextCursor
    ? html`<a class="button" href="${paths.page}?cursor=${files.nextCursor}">More files</a>`
    : ''
  const first = options.paged ? html`<a class="button" href="${paths.page}">First page</a>` : ''
  const main = html`!${REPEATED_ICONS}<section class="card" aria-labelledby="folder-name">
<div class="card-body">
<div class="shared-folder-head"><span class="shared-folder-icon">!${FOLDER_ICON}</span><h1 id="folder-name">${name}</h1></div>
<p class="muted shared-folder-about">A shared folder. !${listWords(files, options.paged)}</p>
<div class="actions">
!${files.items.length > 0 ? html`<a class="button primary" href="${paths.zip}">!${DOWNLOAD_ICON}Download all (zip)</a>` : ''}
<button type="button" class="button" data-copy="${options.urls.folderSharePage(link.publicId)}" hidden>!${LINK_ICON}Copy link</button>
</div>
<p class="toast" role="status" data-copy-status></p>
</div>
!${list}
!${more || first ? html`<nav class="pager shared-files-pager" aria-label="Pages of files">!${first}!${more}</nav>` : ''}
</section>`
  return {
    title: `${name} · Coffer`,
    description: `A folder shared with Coffer`,
    main,
  }
}
