// How a file is shown on a page, fitted to its type: its image preview, a video or audio player, a PDF
// viewer loaded when asked, the first lines of a text file, or an icon with its extension. The owner's file
// page and the public page of a share link show files alike; each passes the addresses its bytes and preview
// are served at. Every text from a user (the name, a text file's contents) goes through ghtml's escaping.
import { html } from 'ghtml'
import { essenceOf } from '../../platform/media-types.ts'
import { extensionLabel, formatSize } from '../../platform/web/format.ts'
import { INLINE_SAFE_TYPES } from './download.ts'
import type { FilePreview } from './files.repository.ts'
import type { TextHead } from './text-head.ts'

/** How much of a text file a page shows. */
export const TEXT_PREVIEW_BYTES = 64 * 1024

export type ViewerKind = 'image' | 'video' | 'audio' | 'pdf' | 'text' | 'icon'

/** What a viewer needs of the file. */
export interface ViewedFile {
  name: string
  contentType: string
  /** The image preview processing made, if any. */
  preview: Pick<FilePreview, 'width' | 'height'> | null
}

/** Where the page's viewer fetches the bytes (inline) and the image preview. */
export interface ViewerPaths {
  inline: string
  preview: string
}

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

/** The viewer a file gets, from its type (and, for source code, its name). */
export function viewerKindOf(file: ViewedFile): ViewerKind {
  const type = essenceOf(file.contentType)
  if (file.preview) return 'image'
  if (type.startsWith('video/') && INLINE_SAFE_TYPES.has(type)) return 'video'
  if (type.startsWith('audio/') && INLINE_SAFE_TYPES.has(type)) return 'audio'
  if (type === 'application/pdf') return 'pdf'
  if (type.startsWith('text/') || TEXT_TYPES.has(type)) return 'text'
  const name = file.name.toLowerCase()
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : name
  if (SOURCE_EXTENSIONS.has(extension)) return 'text'
  return 'icon'
}

/** A sheet of paper with the file's extension on it, for files without a preview. */
export function fileIcon(name: string): string {
  const label = extensionLabel(name)
  return html`<svg class="file-icon" viewBox="0 0 96 120" aria-hidden="true" focusable="false"><path class="sheet" d="M10 4h52l28 28v80a4 4 0 0 1-4 4H10a4 4 0 0 1-4-4V8a4 4 0 0 1 4-4z" stroke-width="3"/><path class="fold" d="M62 4v24a4 4 0 0 0 4 4h24" stroke-width="3"/>!${label ? html`<text x="48" y="82" text-anchor="middle">${label}</text>` : ''}</svg>`
}

/** The file shown as its kind allows; `text` is its first lines when the kind is text. */
export function viewer(
  file: ViewedFile,
  kind: ViewerKind,
  paths: ViewerPaths,
  text: TextHead | undefined,
): string {
  switch (kind) {
    case 'image':
      return html`<div class="preview preview-image"><a href="${paths.inline}" title="Open the full-size image"><img src="${paths.preview}" width="${file.preview?.width}" height="${file.preview?.height}" alt="Preview of ${file.name}"></a></div>`
    case 'video':
      // preload="none": the player fetches nothing (and a share link counts no download) until play.
      return html`<div class="preview"><video controls preload="none" src="${paths.inline}" aria-label="${file.name}"></video></div>`
    case 'audio':
      return html`<div class="preview"><audio controls preload="none" src="${paths.inline}" aria-label="${file.name}"></audio></div>`
    case 'pdf':
      // Shown when asked for, so that opening the page fetches (and counts) nothing; without scripts, a link.
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
