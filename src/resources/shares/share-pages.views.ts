// What the public page of a share link shows: the file's name, size, type and date, a download button (a plain
// link: the answer's Content-Disposition saves the file, and a refusal, such as a download limit reached since
// the page opened, is shown as its page rather than dropped as a failed download), and a preview fitted to its
// type; the password form of a protected link. Every text that came from a user (the
// file's name and type, a text file's contents) goes through ghtml's escaping `${…}`; `!${…}` only inserts
// fragments made here.
import { html } from 'ghtml'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { describeType, formatDate, formatSize } from '../../platform/web/format.ts'
import { type FormState, field, formError } from '../../platform/web/forms.ts'
import type { Page } from '../../platform/web/layout.ts'
import { type ViewerKind, viewer } from '../files/file-viewers.views.ts'
import type { TextHead } from '../files/text-head.ts'
import type { PublicLink } from './public-shares.service.ts'
import type { LinkTarget } from './shares.repository.ts'

/** The addresses of a file's page and its parts, under `page`. */
function filePaths(page: string) {
  return {
    page,
    download: `${page}/download`,
    inline: `${page}/download?disposition=inline`,
    preview: `${page}/preview`,
  }
}

export type FilePaths = ReturnType<typeof filePaths>

/** The addresses of a link's page and its parts, relative to the server. */
export function linkPaths(publicId: string): FilePaths {
  return filePaths(`/s/${publicId}`)
}

/** The addresses of a folder link's page, its zip, and each of its files' page and parts. */
export function folderLinkPaths(publicId: string) {
  const page = `/sf/${publicId}`
  return {
    page,
    zip: `${page}/zip`,
    file: (fileId: string) => filePaths(`${page}/files/${encodeURIComponent(fileId)}`),
  }
}

const DOWNLOAD_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 4v11m0 0-4.5-4.5M12 15l4.5-4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`
const LINK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`
const LOCK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><rect x="5" y="10.5" width="14" height="10" rx="2" fill="none" stroke="currentColor" stroke-width="1.8"/><path d="M8.5 10.5V7.5a3.5 3.5 0 0 1 7 0v3" fill="none" stroke="currentColor" stroke-width="1.8"/></svg>`

/** Tags that make a chat app or social site show a card for the link: the name, size and image preview. */
function linkPreviewTags(link: PublicLink, urls: PublicUrls): string {
  const { file, preview } = link
  const paths = linkPaths(link.publicId)
  const description = `${formatSize(file.size)} · ${describeType(file.contentType)}`
  const image = preview ? `${urls.origin}${paths.preview}` : undefined
  return html`<meta property="og:type" content="website">
<meta property="og:site_name" content="Coffer">
<meta property="og:title" content="${file.name}">
<meta property="og:description" content="${description}">
<meta property="og:url" content="${urls.sharePage(link.publicId)}">
!${
    image && preview
      ? html`<meta property="og:image" content="${image}">
<meta property="og:image:type" content="${preview.contentType}">
<meta property="og:image:width" content="${preview.width}">
<meta property="og:image:height" content="${preview.height}">
<meta property="og:image:alt" content="Preview of ${file.name}">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:image" content="${image}">`
      : html`<meta name="twitter:card" content="summary">`
  }
<meta name="twitter:title" content="${file.name}">
<meta name="twitter:description" content="${description}">`
}

/**
 * The page of a file a working link opens, once any password has been given: a file link's page, or (with
 * `inFolder`) one of a folder link's files, with the way back to the folder's page.
 */
export function sharePage(
  link: PublicLink,
  options: {
    urls: PublicUrls
    text: TextHead | undefined
    kind: ViewerKind
    inFolder?: { name: string; page: string; copyUrl: string }
  },
): Page {
  const { file, publicId } = link
  const { inFolder } = options
  const paths = inFolder ? folderLinkPaths(publicId).file(file.id) : linkPaths(publicId)
  const created = new Date(file.createdAt).toISOString()
  const main = html`!${inFolder ? html`<p class="back-link"><a href="${inFolder.page}">← All files in ${inFolder.name}</a></p>` : ''}<article class="card" aria-labelledby="file-name">
!${viewer({ ...link.file, preview: link.preview }, options.kind, paths, options.text)}
<div class="card-body">
<h1 id="file-name">${file.name}</h1>
<ul class="meta" aria-label="About this file">
<li>${formatSize(file.size)}</li>
<li title="${file.contentType}">${describeType(file.contentType)}</li>
<li>Added <time datetime="${created}" data-local>${formatDate(file.createdAt)}</time></li>
</ul>
<div class="actions">
<a class="button primary" href="${paths.download}">!${DOWNLOAD_ICON}Download</a>
<button type="button" class="button" data-copy="${inFolder ? inFolder.copyUrl : options.urls.sharePage(publicId)}" hidden>!${LINK_ICON}Copy link</button>
</div>
<p class="toast" role="status" data-copy-status></p>
</div>
</article>`
  return {
    title: `${file.name} · Coffer`,
    description: `${formatSize(file.size)} · ${describeType(file.contentType)}, shared with Coffer`,
    // A chat app's card of the file names its link; one of a folder's files is reached from the folder's.
    head: inFolder ? undefined : linkPreviewTags(link, options.urls),
    main,
  }
}

/**
 * The form a protected link shows first; nothing of what it shares, not even its name. Posted to the link's page
 * (a folder link's file page shows it too).
 */
export function passwordPage(state: FormState, target: LinkTarget, publicId?: string): Page {
  const action = target === 'folder' && publicId !== undefined ? folderLinkPaths(publicId).page : undefined
  const main = html`<section class="card narrow" aria-labelledby="password-title"><div class="card-body">
<div class="notice">!${LOCK_ICON}<div>
<h1 id="password-title">This link is protected</h1>
<p class="muted">Enter the password you were given to see the !${target === 'file' ? 'file' : 'folder'}.</p>
</div></div>
<form method="post"!${action ? html` action="${action}"` : ''} novalidate>
!${formError(state)}
!${field(state, { name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', maxLength: 256 })}
<div class="actions"><button class="button primary" type="submit">Open</button></div>
</form>
</div></section>`
  return { title: 'Protected link · Coffer', main }
}
