/// <reference lib="dom" />
// What every page that uploads shares in the browser (the file request's page, the owner's files page): a
// file's row in the list of uploads (its name, a button, a progress bar, a status line), the transfer of its
// bytes to the blob API with the @vercel/blob client, and the words for progress and failures. Each page keeps
// its own flow (what it prepares uploads through, when it sends, what it does once a file is stored).
import { completeMultipartUpload, createMultipartUpload, upload, uploadPart } from '@vercel/blob/client'
import { formatSize } from '../format-size.shared.ts'

declare global {
  /** Read by @vercel/blob as `process.env.VERCEL_BLOB_API_URL` (web/build.ts defines it so). */
  var COFFER_BLOB_API_URL: string | undefined
}

/** An upload as a page's API prepared it: what `upload()` of @vercel/blob needs. */
export interface Grant {
  intentId: string
  contentType: string
  size: number
  pathname: string
  handleUploadUrl: string
  clientPayload: { intentId: string; name: string; grant: string }
  /** When the grant is refused: an upload must have started by then. */
  expiresAt: string
}

/** A file's row in a list of uploads. */
export interface UploadRow {
  element: HTMLLIElement
  progress: HTMLProgressElement
  status: HTMLElement
  button: HTMLButtonElement
}

/** The row of `file` (styled by `.file-item` in styles.css); `onButton` runs when its one button is pressed. */
export function uploadRow(file: File, onButton: () => void): UploadRow {
  const element = document.createElement('li')
  element.className = 'file-item'
  const row = document.createElement('div')
  row.className = 'file-row'
  const name = document.createElement('span')
  name.className = 'file-name'
  name.textContent = file.name
  const button = document.createElement('button')
  button.type = 'button'
  button.className = 'button small'
  row.append(name, button)
  const progress = document.createElement('progress')
  progress.max = 100
  progress.value = 0
  progress.setAttribute('aria-label', `Upload of ${file.name}`)
  const status = document.createElement('p')
  status.className = 'file-status'
  element.append(row, progress, status)
  button.addEventListener('click', onButton)
  return { element, progress, status, button }
}

/**
 * Shows a state on the row (`data-state`, for its colours), its message, and its button's label and
 * accessible name (none: the button is hidden). The bar is full once the bytes are stored.
 */
export function showState(
  row: UploadRow,
  file: File,
  state: string,
  message: string,
  button: [label: string, action: string] | undefined,
): void {
  row.element.dataset.state = state
  row.status.textContent = message
  row.button.hidden = !button
  if (button) {
    row.button.textContent = button[0]
    row.button.setAttribute('aria-label', `${button[1]} ${file.name}`)
  }
  row.progress.hidden = state === 'chosen' || state === 'refused'
  if (state === 'processing' || state === 'done') row.progress.value = 100
}

/** The size of a part, and how many are sent at once: @vercel/blob's own in a browser. */
const PART_BYTES = 8 * 1024 * 1024
const PARTS_AT_ONCE = 6

/** Sends the file's bytes to the blob API as `grant` allows, in parts above `multipartThreshold`. */
export async function sendBytes(
  grant: Grant,
  file: File,
  options: {
    multipartThreshold: number
    signal: AbortSignal
    onProgress(loaded: number, total: number): void
  },
): Promise<void> {
  if (grant.size > options.multipartThreshold) return sendInParts(grant, file, options)
  await upload(grant.pathname, file, {
    access: 'private',
    contentType: grant.contentType,
    handleUploadUrl: grant.handleUploadUrl,
    clientPayload: JSON.stringify(grant.clientPayload),
    abortSignal: options.signal,
    onUploadProgress: ({ loaded, total }) => options.onProgress(loaded, total),
  })
}

/**
 * A multipart upload through @vercel/blob's own steps (create, each part, complete), each part a slice of
 * the file: the browser sends it from the disk, the page's thread never touching its bytes. `upload()` reads
 * the file as a stream and copies it into new parts in the page, which cost Chromium 39 s of CPU a GiB and held
 * the page to 0.6 of the rate of the same client in Node; from slices, 9 s and 1.1 (bench/app-uploads.ts).
 * The client token is asked for as `upload()` asks (docs/blob-protocol.md); a failed part is retried by the
 * client, and a part that fails for good stops the others.
 */
async function sendInParts(
  grant: Grant,
  file: File,
  options: { signal: AbortSignal; onProgress(loaded: number, total: number): void },
): Promise<void> {
  const handshake = await fetch(grant.handleUploadUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'blob.generate-client-token',
      payload: {
        pathname: grant.pathname,
        clientPayload: JSON.stringify(grant.clientPayload),
        multipart: true,
      },
    }),
    signal: options.signal,
  })
  if (!handshake.ok) throw new Error('Vercel Blob: Failed to retrieve the client token')
  const { clientToken } = (await handshake.json()) as { clientToken: string }
  // Aborted when the person cancels, or when a part fails for good: the other parts then stop too.
  const stop = new AbortController()
  const { signal } = stop
  if (options.signal.aborted) stop.abort()
  options.signal.addEventListener('abort', () => stop.abort(), { once: true })
  const common = {
    access: 'private' as const,
    token: clientToken,
    contentType: grant.contentType,
    abortSignal: signal,
  }
  const { key, uploadId } = await createMultipartUpload(grant.pathname, common)
  const count = Math.ceil(file.size / PART_BYTES)
  const sent = new Array<number>(count).fill(0)
  const parts: { partNumber: number; etag: string }[] = []
  let next = 0
  const sendParts = async () => {
    while (next < count && !signal.aborted) {
      const index = next++
      const body = file.slice(index * PART_BYTES, Math.min(file.size, (index + 1) * PART_BYTES))
      parts[index] = await uploadPart(grant.pathname, body, {
        ...common,
        key,
        uploadId,
        partNumber: index + 1,
        onUploadProgress: ({ loaded }) => {
          sent[index] = loaded
          options.onProgress(
            sent.reduce((sum, bytes) => sum + bytes, 0),
            file.size,
          )
        },
      })
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(PARTS_AT_ONCE, count) }, sendParts))
  } catch (error) {
    stop.abort()
    throw error
  }
  options.signal.throwIfAborted()
  await completeMultipartUpload(grant.pathname, parts, { ...common, key, uploadId })
}

/** Moves the row's bar, and says how far, how fast and how long is left: "40 % · 2 MB of 5 MB · 1 MB/s". */
export function showProgress(row: UploadRow, loaded: number, total: number, startedAt: number): void {
  const percent = total > 0 ? Math.floor((loaded / total) * 100) : 0
  row.progress.value = percent
  const seconds = (performance.now() - startedAt) / 1000
  const speed = seconds > 0.2 && loaded > 0 ? loaded / seconds : 0
  const left = speed > 0 ? Math.ceil((total - loaded) / speed) : 0
  row.status.textContent = [
    `${percent} %`,
    `${formatSize(loaded)} of ${formatSize(total)}`,
    speed ? `${formatSize(speed)}/s` : '',
    left > 2 ? `about ${left < 90 ? `${left} s` : `${Math.round(left / 60)} min`} left` : '',
  ]
    .filter(Boolean)
    .join(' · ')
}

/** Why a transfer failed, in words for the person who sent it. */
export function failureText(error: unknown): string {
  const message = error instanceof Error ? error.message : ''
  if (/network|fetch|connect/i.test(message)) return 'The connection was lost. Retry to send this file again.'
  return message ? `Not sent: ${message.replace(/^Vercel Blob: /, '')}` : 'Not sent. Retry to send it again.'
}
