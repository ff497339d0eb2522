/// <reference lib="dom" />
// What every page that uploads shares in the browser (the file request's page, the owner's files page): a
// file's row in the list of uploads (its name, a button, a progress bar, a status line) and the words for
// progress and failures. The uploads themselves go through the SDK's upload queue (sdk/upload-queue.ts), the
// one every client uses; a page says only where it prepares them and what it does once a file is stored.
import { formatSize } from '../format-size.shared.ts'
import { CofferError } from '../sdk/errors.ts'
import type { UploadState } from '../sdk/upload-queue.ts'

/**
 * A row's button in the states every page treats alike: its label, and the action its accessible name starts
 * with. Pages add their own for the states they handle their way (a file not sent yet, a file done).
 */
export const UPLOAD_BUTTONS: Partial<Record<UploadState, [string, string]>> = {
  waiting: ['Cancel', 'Cancel the upload of'],
  uploading: ['Cancel', 'Cancel the upload of'],
  failed: ['Retry', 'Retry the upload of'],
  cancelled: ['Retry', 'Retry the upload of'],
}

/** The words of a row in the states every page says alike; a failure says why (failureText). */
export const UPLOAD_TEXTS: Partial<Record<UploadState, string>> = {
  waiting: 'Waiting to send…',
  uploading: 'Starting…',
  processing: 'Checking the file…',
  cancelled: 'Cancelled.',
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

/** Why a transfer failed (sdk/transfer.ts throws CofferErrors), in words for the person who sent it. */
export function failureText(error: unknown): string {
  if (error instanceof CofferError && error.code === 'network_error') {
    return 'The connection was lost. Retry to send this file again.'
  }
  const message = error instanceof Error ? error.message : ''
  return message ? `Not sent: ${message}` : 'Not sent. Retry to send it again.'
}
