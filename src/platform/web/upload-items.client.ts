/// <reference lib="dom" />
// What every page that uploads shares in the browser (the file request's page, the owner's files page): a
// file's row in the list of uploads (its name, a button, a progress bar, a status line) and the words for
// progress and failures. The uploads themselves go through the SDK's upload queue (sdk/upload-queue.ts), the
// one every client uses; a page says only where it prepares them and what it does once a file is stored.
// Uploads resume (docs/uploads.md, "Resuming an upload"): each page keeps its uploads' records in IndexedDB
// (keepForResuming, sdk/resume-indexeddb.ts), lists those a reload, a closed tab or a lost connection left
// unfinished (UnfinishedList), and a file chosen again that matches one (name, size, last modified) goes on
// from the parts the server holds.

import { CofferError } from '../../clients/sdk/errors.ts'
import { type ResumeRecord, type ResumeStore, resumeKeyOf } from '../../clients/sdk/resume.ts'
import type {
  QueuedFile,
  UploadEndpoint,
  UploadItem,
  UploadQueueOptions,
  UploadState,
} from '../../clients/sdk/upload-queue.ts'
import { formatSize } from '../format-size.shared.ts'

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

/**
 * Moves the row's bar, and says how far, how fast and how long is left: "40 % · 2 MB of 5 MB · 1 MB/s". The
 * speed counts only what this page sent: not the `resumed` bytes the server held before.
 */
export function showProgress(
  row: UploadRow,
  loaded: number,
  total: number,
  startedAt: number,
  resumed = 0,
): void {
  const percent = total > 0 ? Math.floor((loaded / total) * 100) : 0
  row.progress.value = percent
  const seconds = (performance.now() - startedAt) / 1000
  const sent = Math.max(0, loaded - resumed)
  const speed = seconds > 0.2 && sent > 0 ? sent / seconds : 0
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

// --- Uploads that resume -------------------------------------------------------------------------------------

/** A record as a page keeps it: resume.ts's, and the folder the upload goes to (the files page). */
export type PageRecord = ResumeRecord & { folderId?: string; place?: string }

/** A page's upload: a queued file, with the File it was chosen as (its name, size and last-modified). */
type PageUpload = QueuedFile & { file: File }

/** "Resuming: 512 MB of 1 GB already stored." */
export function resumingText(stored: number, total: number): string {
  return `Resuming: ${formatSize(stored)} of ${formatSize(total)} already stored.`
}

/**
 * Marks the row of an upload that goes on from the `stored` bytes the server holds, on a line of its own under
 * its status (which shows the progress), with what the page adds (`more`).
 */
export function markResumed(row: UploadRow, stored: number, total: number, more = ''): void {
  row.element.dataset.resumed = String(stored)
  let note = row.element.querySelector<HTMLElement>('.file-note')
  if (!note) {
    note = document.createElement('p')
    note.className = 'file-note'
    row.element.append(note)
  }
  note.textContent = more ? `${resumingText(stored, total)} ${more}` : resumingText(stored, total)
}

/**
 * The queue's hooks that keep each upload's record in `store` as it goes (its grant once prepared, its parts
 * as they are stored) and drop it once the upload can no longer be resumed. `more` adds what the page keeps.
 * A store that fails (a full disk) keeps nothing: the upload goes on, it only cannot resume after a reload.
 */
export function keepForResuming<Entry extends PageUpload>(
  store: ResumeStore,
  more: (entry: Entry) => Partial<PageRecord> = () => ({}),
): Pick<UploadQueueOptions<Entry>, 'onPrepared' | 'onStored' | 'onFinished'> {
  const save = (item: UploadItem<Entry>) => {
    const { file } = item.file
    if (!item.grant) return
    const key = resumeKeyOf(file)
    const record: PageRecord = {
      key,
      name: file.name,
      size: file.size,
      lastModified: file.lastModified,
      grant: item.grant,
      ...(item.multipart ? { uploadId: item.multipart.uploadId, parts: item.multipart.parts } : {}),
      updatedAt: Date.now(),
      ...more(item.file),
    }
    store.set(key, record).catch(() => undefined)
  }
  return {
    onPrepared: (items) => {
      for (const item of items) save(item)
    },
    onStored: save,
    onFinished: (item) => {
      store.delete(resumeKeyOf(item.file.file)).catch(() => undefined)
    },
  }
}

/** An upload a page left unfinished: its record, and the bytes the server holds of it. */
export interface Unfinished {
  record: PageRecord
  stored: number
}

const bytesOf = (parts: readonly { size: number }[] | undefined) =>
  (parts ?? []).reduce((sum, part) => sum + part.size, 0)

/**
 * The uploads of `store` still unfinished: those whose grant has not expired (the store drops the others)
 * and whose status is still uploading, with the bytes the server holds. A record the server no longer knows
 * (`gone` says which refusals mean that), or whose upload ended or is being made into a file, is dropped; when
 * the server cannot be reached, the records are listed as they were kept.
 */
export async function unfinishedUploads(
  store: ResumeStore,
  endpoint: UploadEndpoint,
  gone: (status: number) => boolean,
): Promise<Unfinished[]> {
  const records = await store.list().catch(() => [] as ResumeRecord[])
  const found = await Promise.all(
    records.map(async (record): Promise<Unfinished | undefined> => {
      try {
        const [status] = await endpoint.status([record.grant])
        if (status?.status === 'pending' && status.phase !== 'processing') {
          return { record, stored: bytesOf(status.multipart?.parts) }
        }
      } catch (error) {
        if (!(error instanceof CofferError && gone(error.status))) {
          return { record, stored: bytesOf(record.parts) }
        }
      }
      await store.delete(record.key).catch(() => undefined)
      return undefined
    }),
  )
  return found
    .filter((each): each is Unfinished => each !== undefined)
    .sort((a, b) => b.record.updatedAt - a.record.updatedAt)
}

/** What an UnfinishedList needs of its page. */
export interface UnfinishedOptions {
  /** Where the list goes: before this element, in its parent. */
  before: Element
  /** What Choose does: opens the page's file input. */
  choose(): void
  /** What Forget does: ends the upload on the server (the record is then dropped). */
  forget(unfinished: Unfinished): Promise<void>
  /** Where the row's upload goes, when the page says it ("It goes to Photos."). */
  place?(record: PageRecord): string
  /** Says a change to readers of a screen reader. */
  announce(text: string): void
}

/**
 * The uploads a reload, a closed tab or a lost connection left unfinished, in the page's uploads area: each
 * with the bytes stored, a button to choose the file again, and Forget. A file chosen again that matches one
 * (`take`) leaves the list and goes on from the parts stored.
 */
export class UnfinishedList {
  readonly element: HTMLElement
  readonly #list: HTMLUListElement
  readonly #options: UnfinishedOptions
  readonly #rows = new Map<string, { unfinished: Unfinished; row: HTMLLIElement }>()

  constructor(options: UnfinishedOptions) {
    this.#options = options
    this.element = document.createElement('section')
    this.element.className = 'unfinished'
    this.element.setAttribute('aria-labelledby', 'unfinished-title')
    this.element.hidden = true
    const title = document.createElement('h2')
    title.id = 'unfinished-title'
    title.className = 'unfinished-title'
    title.textContent = 'Unfinished uploads'
    this.#list = document.createElement('ul')
    this.#list.className = 'unfinished-list'
    this.element.append(title, this.#list)
    options.before.before(this.element)
  }

  show(unfinished: Unfinished[]): void {
    for (const each of unfinished) {
      if (this.#rows.has(each.record.key)) continue
      const row = this.#row(each)
      this.#rows.set(each.record.key, { unfinished: each, row })
      this.#list.append(row)
    }
    this.element.hidden = this.#rows.size === 0
  }

  /** The unfinished upload `file` is the file of, taken out of the list; none when it matches none. */
  take(file: File): Unfinished | undefined {
    const found = this.#rows.get(resumeKeyOf(file))
    if (!found) return undefined
    this.#drop(found.unfinished.record.key)
    return found.unfinished
  }

  #drop(key: string): void {
    this.#rows.get(key)?.row.remove()
    this.#rows.delete(key)
    this.element.hidden = this.#rows.size === 0
  }

  #row(unfinished: Unfinished): HTMLLIElement {
    const { record, stored } = unfinished
    const row = document.createElement('li')
    row.className = 'unfinished-item'
    const text = document.createElement('p')
    text.className = 'unfinished-text'
    const name = document.createElement('span')
    name.className = 'file-name'
    name.textContent = record.name
    const place = this.#options.place?.(record)
    text.append(
      name,
      ` — ${sizeText(stored)} of ${sizeText(record.size)} stored. Choose the file again to finish it.`,
      place ? ` It goes to ${place}.` : '',
    )
    const bar = document.createElement('progress')
    bar.max = 100
    bar.value = record.size > 0 ? Math.floor((stored / record.size) * 100) : 0
    bar.setAttribute('aria-label', `Stored of ${record.name}`)
    const actions = document.createElement('div')
    actions.className = 'unfinished-actions'
    const choose = button('Choose file', `Choose file ${record.name} again to finish its upload`)
    choose.classList.add('primary')
    choose.addEventListener('click', () => this.#options.choose())
    const forget = button('Forget', `Forget the unfinished upload of ${record.name}`)
    forget.addEventListener('click', async () => {
      forget.disabled = true
      await this.#options.forget(unfinished).catch(() => undefined)
      this.#drop(record.key)
      this.#options.announce(`The unfinished upload of ${record.name} was forgotten.`)
    })
    actions.append(choose, forget)
    row.append(text, bar, actions)
    return row
  }
}

/** A size that a line never breaks inside ("43.2 MB"). */
const sizeText = (bytes: number) => formatSize(bytes).replace(' ', '\u00a0')

function button(label: string, name: string): HTMLButtonElement {
  const element = document.createElement('button')
  element.type = 'button'
  element.className = 'button small'
  element.textContent = label
  element.setAttribute('aria-label', name)
  return element
}
