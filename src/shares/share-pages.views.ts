// What the public page of a share link shows: the file's name, size, type and date, a download button, and a
// preview fitted to its type; the password form of a protected link. Every text that came from a user (the
// file's name and type, a text file's contents) goes through ghtml's escaping `${…}`; `!${…}` only inserts
// fragments made here.
import { html } from 'ghtml'
import { INLINE_SAFE_TYPES } from '../files/download.ts'
import type { PublicUrls } from '../public-urls.ts'
import { describeType, extensionLabel, formatDate, formatSize } from '../web/format.ts'
import { type FormState, field, formError } from '../web/forms.ts'
import type { Page } from '../web/layout.ts'
import type { PublicLink, TextHead } from './public-shares.service.ts'

/** How much of a text file the page shows. */
export const TEXT_PREVIEW_BYTES = 64 * 1024

export type PreviewKind = 'image' | 'video' | 'audio' | 'pdf' | 'text' | 'icon'

/** Types shown as text whatever their family; text/* always is. */
const TEXT_TYPES = new Set([
  'application/json',
  'application/xml',
  'application/javascript',
  'application/typescript',
  'application/x-sh',
  'application/x-yaml',
  'application/yaml',
  'application/toml',
  'application/sql',
  'application/x-httpd-php',
  'image/svg+xml',
])

/** Source files, which uploads often declare as octet-stream (or, for .ts, as a video type). */
const SOURCE_EXTENSIONS = new Set(
  (
    'ts tsx js jsx mjs cjs json md txt log csv tsv py rb go rs java kt kts c h cc cpp hpp cs swift php sh bash zsh ' +
    'ps1 sql yml yaml toml ini cfg conf env xml html htm css scss less vue svelte lua pl r dart scala ex exs erl hs ' +
    'clj el vim dockerfile makefile gradle properties gitignore editorconfig'
  ).split(' '),
)

const essenceOf = (contentType: string) => (contentType.split(';')[0] ?? '').trim().toLowerCase()

/** The preview a file gets, from its type (and, for source code, its name). */
export function previewKindOf(link: PublicLink): PreviewKind {
  const type = essenceOf(link.file.contentType)
  if (link.preview) return 'image'
  if (type.startsWith('video/') && INLINE_SAFE_TYPES.has(type)) return 'video'
  if (type.startsWith('audio/') && INLINE_SAFE_TYPES.has(type)) return 'audio'
  if (type === 'application/pdf') return 'pdf'
  if (type.startsWith('text/') || TEXT_TYPES.has(type)) return 'text'
  const name = link.file.name.toLowerCase()
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : name
  if (SOURCE_EXTENSIONS.has(extension)) return 'text'
  return 'icon'
}

/** The addresses of a link's page and its parts, relative to the server. */
export function linkPaths(publicId: string) {
  const page = `/s/${publicId}`
  return {
    page,
    download: `${page}/download`,
    inline: `${page}/download?disposition=inline`,
    preview: `${page}/preview`,
  }
}

const DOWNLOAD_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 4v11m0 0-4.5-4.5M12 15l4.5-4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`
const LINK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`
const LOCK_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><rect x="5" y="10.5" width="14" height="10" rx="2" fill="none" stroke="currentColor" stroke-width="1.8"/><path d="M8.5 10.5V7.5a3.5 3.5 0 0 1 7 0v3" fill="none" stroke="currentColor" stroke-width="1.8"/></svg>`

/** A sheet of paper with the file's extension on it, for files without a preview. */
function fileIcon(name: string): string {
  const label = extensionLabel(name)
  return html`<svg class="file-icon" viewBox="0 0 96 120" aria-hidden="true" focusable="false"><path class="sheet" d="M10 4h52l28 28v80a4 4 0 0 1-4 4H10a4 4 0 0 1-4-4V8a4 4 0 0 1 4-4z" stroke-width="3"/><path class="fold" d="M62 4v24a4 4 0 0 0 4 4h24" stroke-width="3"/>!${label ? html`<text x="48" y="82" text-anchor="middle">${label}</text>` : ''}</svg>`
}

function previewOf(link: PublicLink, kind: PreviewKind, text: TextHead | undefined): string {
  const paths = linkPaths(link.publicId)
  const { file, preview } = link
  switch (kind) {
    case 'image':
      return html`<div class="preview preview-image"><a href="${paths.inline}" title="Open the full-size image"><img src="${paths.preview}" width="${preview?.width}" height="${preview?.height}" alt="Preview of ${file.name}"></a></div>`
    case 'video':
      // preload="none": the player fetches nothing, and counts no download, until the reader presses play.
      return html`<div class="preview"><video controls preload="none" src="${paths.inline}" aria-label="${file.name}"></video></div>`
    case 'audio':
      return html`<div class="preview"><audio controls preload="none" src="${paths.inline}" aria-label="${file.name}"></audio></div>`
    case 'pdf':
      // Shown when asked for, so that opening the page does not count as a download; without scripts, a link.
      // The PDF is sandboxed by its own response's policy (download.ts); a `sandbox` attribute on the frame
      // would make Chromium refuse to show it at all.
      return html`<div class="preview preview-icon preview-pdf" data-reveal-container>!${fileIcon(file.name)}<div class="actions">
<button type="button" class="button" data-reveal="pdf-viewer" hidden>Show the PDF here</button>
<a class="button" href="${paths.inline}" target="_blank" rel="noopener">Open in the browser</a>
</div><template id="pdf-viewer"><iframe src="${paths.inline}" title="${file.name}"></iframe></template></div>`
    case 'text':
      if (text) {
        return html`<div class="preview preview-text"><pre tabindex="0" aria-label="The contents of ${file.name}">${text.text}</pre>!${
          text.truncated
            ? html`<p class="preview-note">The first ${formatSize(TEXT_PREVIEW_BYTES)} are shown. Download the file for the rest.</p>`
            : ''
        }</div>`
      }
      return html`<div class="preview preview-icon">!${fileIcon(file.name)}</div>`
    case 'icon':
      return html`<div class="preview preview-icon">!${fileIcon(file.name)}</div>`
  }
}

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

/** The page of a working link, once any password has been given. */
export function sharePage(
  link: PublicLink,
  options: { urls: PublicUrls; text: TextHead | undefined; kind: PreviewKind },
): Page {
  const { file } = link
  const paths = linkPaths(link.publicId)
  const created = new Date(file.createdAt).toISOString()
  const main = html`<article class="card" aria-labelledby="file-name">
!${previewOf(link, options.kind, options.text)}
<div class="card-body">
<h1 id="file-name">${file.name}</h1>
<ul class="meta" aria-label="About this file">
<li>${formatSize(file.size)}</li>
<li title="${file.contentType}">${describeType(file.contentType)}</li>
<li>Added <time datetime="${created}" data-local>${formatDate(file.createdAt)}</time></li>
</ul>
<div class="actions">
<a class="button primary" href="${paths.download}" download>!${DOWNLOAD_ICON}Download</a>
<button type="button" class="button" data-copy="${options.urls.sharePage(link.publicId)}" hidden>!${LINK_ICON}Copy link</button>
</div>
<p class="toast" role="status" data-copy-status></p>
</div>
</article>`
  return {
    title: `${file.name} · Coffer`,
    description: `${formatSize(file.size)} · ${describeType(file.contentType)}, shared with Coffer`,
    head: linkPreviewTags(link, options.urls),
    main,
  }
}

/** The form a protected link shows first; nothing of the file, not even its name. */
export function passwordPage(state: FormState): Page {
  const main = html`<section class="card narrow" aria-labelledby="password-title"><div class="card-body">
<div class="notice">!${LOCK_ICON}<div>
<h1 id="password-title">This link is protected</h1>
<p class="muted">Enter the password you were given to see the file.</p>
</div></div>
<form method="post" novalidate>
!${formError(state)}
!${field(state, { name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', maxLength: 256 })}
<div class="actions"><button class="button primary" type="submit">Open</button></div>
</form>
</div></section>`
  return { title: 'Protected link · Coffer', main }
}
