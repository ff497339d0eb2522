/// <reference lib="dom" />
// The files page (files-app.views.ts) in the browser. The page works without it, but for uploading:
// - Selection: a box that selects every file shown, and a count of the files selected above the actions.
// - Uploads: files chosen with the input or dropped anywhere on the page go to the folder in view. Each is
//   checked against the server's size limit before anything is sent; the uploads are prepared through the
//   session's own endpoint (POST /uploads, with the CSRF token, never an API key), and each file's bytes go to
//   the blob API with the SDK's transfer (in parts above 5 MiB, a failed part retried by the library),
//   three at a time, each with its progress, speed, Cancel and Retry; a file uploaded leaves the list a few
//   seconds later, and Clear finished empties it of all that is not under way. Once stored, the uploads are followed
//   through POST /uploads/status; a file that is complete is added to the list as the server renders its row
//   (GET /files/rows), so names stay text and rows look alike, without a reload.
// - Resuming: each upload's record is kept in IndexedDB (one database per server and account) as it goes, so
//   the uploads a reload, a closed tab or a lost connection left unfinished are listed when the page opens;
//   a file chosen or dropped again that matches one (name, size, last modified) sends only the parts the
//   server lacks, into the folder it was going to. Retry after a failed transfer does the same; Forget ends one.

import { CofferError } from '../../clients/sdk/errors.ts'
import type { ResumeStore } from '../../clients/sdk/resume.ts'
import { indexedDbResumeStore } from '../../clients/sdk/resume-indexeddb.ts'
import { sessionUploads } from '../../clients/sdk/upload-endpoints.ts'
import {
  blobFile,
  type QueuedFile,
  type UploadEndpoint,
  type UploadFailure,
  type UploadItem,
  UploadQueue,
  type UploadState,
} from '../../clients/sdk/upload-queue.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { showLocalTimes } from '../../platform/web/local-times.client.ts'
import {
  failureText,
  keepForResuming,
  markResumed,
  type PageRecord,
  showProgress,
  showState,
  UnfinishedList,
  UPLOAD_BUTTONS,
  UPLOAD_TEXTS,
  type UploadRow,
  unfinishedUploads,
  uploadRow,
} from '../../platform/web/upload-items.client.ts'

/** How long an uploaded file's row stays in the list: its row in the table of files says the rest. */
const DONE_ROW_MS = 5000

setUpSelection()

// --- Selection -----------------------------------------------------------------------------------------------

function setUpSelection(): void {
  const form = document.querySelector<HTMLFormElement>('[data-bulk-form]')
  if (!form) return
  const all = form.querySelector<HTMLInputElement>('[data-select-all]')
  const count = form.querySelector<HTMLElement>('[data-selected-count]')
  const initial = count?.textContent ?? ''
  const boxes = () => [...form.querySelectorAll<HTMLInputElement>('input[name="fileIds"]')]
  // The bar of actions shows once a file is selected (styles.css): without this script it is always there.
  form.classList.add('selection-ready')
  const update = () => {
    const chosen = boxes().filter((box) => box.checked).length
    if (count)
      count.textContent = chosen === 0 ? initial : `${chosen} file${chosen === 1 ? '' : 's'} selected`
    form.classList.toggle('has-selection', chosen > 0)
    if (all) {
      all.checked = chosen > 0 && chosen === boxes().length
      all.indeterminate = chosen > 0 && chosen < boxes().length
    }
  }
  if (all) {
    all.hidden = false
    all.addEventListener('change', () => {
      for (const box of boxes()) box.checked = all.checked
      update()
    })
  }
  form.addEventListener('change', (event) => {
    if ((event.target as HTMLElement).matches('input[name="fileIds"]')) update()
  })
  // A bulk action with nothing selected is refused here, where the reason can be said at once.
  form.addEventListener('submit', (event) => {
    if (boxes().some((box) => box.checked)) return
    event.preventDefault()
    if (count) {
      count.textContent = 'Select at least one file first: tick the box beside it.'
      count.classList.add('is-warning')
    }
  })
  update()
}

// --- Uploads -------------------------------------------------------------------------------------------------

/** A file on the page: refused before anything is sent (too large, empty), or its upload in the queue's. */
interface Entry extends QueuedFile, UploadRow {
  file: File
  /** Why it was refused before anything was sent; none when it went to the queue. */
  problem: string | undefined
  /** The folder it goes to ('' for the root): the page's, or the one an upload resumed was going to. */
  folderId: string
  /** That folder's name, as its page said it. */
  place: string
  /** What the row of an upload resumed into another folder than the page's says of it. */
  elsewhere?: string
}

/** What a file's row shows: its upload's state, or `refused` when the file itself was refused. */
type EntryState = 'refused' | UploadState

/** Each state's button (web/upload-items.client.ts), and Dismiss for a file refused or done. */
const LABELS: Partial<Record<EntryState, [string, string]>> = {
  ...UPLOAD_BUTTONS,
  refused: ['Dismiss', 'Dismiss'],
  done: ['Dismiss', 'Dismiss'],
}

/** The words each state of an upload shows; a failure says why, a file uploaded its size. */
const TEXTS: Partial<Record<UploadState, string>> = { preparing: 'Preparing…', ...UPLOAD_TEXTS }

class Uploader {
  readonly section: HTMLElement
  readonly input: HTMLInputElement
  readonly list: HTMLUListElement
  readonly announce: HTMLElement
  readonly overlay: HTMLElement | null
  readonly rows: HTMLElement | null
  readonly tableWrap: HTMLElement | null
  readonly clear: HTMLButtonElement | null
  readonly maxFileSize: number
  readonly entries: Entry[] = []
  readonly queue: UploadQueue<Entry>
  /** The uploads left unfinished, once asked for (unfinishedUploads). */
  readonly unfinished: UnfinishedList
  /** Whether the unfinished uploads are known (listed): files chosen before wait for them. */
  unfinishedKnown = false
  /** How deep in the page's elements files are dragged: the overlay shows while they are over it. */
  depth = 0

  constructor(section: HTMLElement) {
    const data = section.dataset
    this.section = section
    this.input = section.querySelector<HTMLInputElement>('input[type="file"]') as HTMLInputElement
    this.list = section.querySelector<HTMLUListElement>('[data-upload-list]') as HTMLUListElement
    this.announce = section.querySelector<HTMLElement>('[data-upload-announce]') as HTMLElement
    this.overlay = document.querySelector<HTMLElement>('[data-drop-overlay]')
    this.rows = document.querySelector<HTMLElement>('[data-file-rows]')
    this.tableWrap = document.querySelector<HTMLElement>('[data-table-wrap]')
    this.clear = section.querySelector<HTMLButtonElement>('[data-upload-clear]')
    this.maxFileSize = Number(data.maxFileSize)
    const endpoint = sessionUploads({
      csrf: data.csrf ?? '',
      folderId: data.folderId || null,
      transfer: { blobApiUrl: data.blobApi ?? '', multipartThreshold: Number(data.multipartThreshold) },
    })
    // Two accounts on one browser keep their uploads apart; the records hold grants, secrets of the account.
    const store = indexedDbResumeStore(`coffer-uploads ${location.origin} ${data.account ?? ''}`)
    this.queue = new UploadQueue<Entry>({
      endpoint,
      perPreparation: Number(data.perPreparation),
      // The newest files first: their rows are at the top of the list.
      newestFirst: true,
      onChange: (items) => this.changed(items),
      onProgress: (item, loaded, total) =>
        showProgress(item.file, loaded, total, item.startedAt, item.resumedBytes),
      onComplete: (items) => this.showNewRows(items),
      onResume: (item) => markResumed(item.file, item.resumedBytes, item.file.size, item.file.elsewhere),
      ...keepForResuming<Entry>(store, (entry) => ({ folderId: entry.folderId, place: entry.place })),
    })
    this.unfinished = this.listUnfinished(store, endpoint)
    section.hidden = false
  }

  /** The uploads left unfinished (by a reload, a closed tab, a lost connection), listed once known. */
  listUnfinished(store: ResumeStore, endpoint: UploadEndpoint): UnfinishedList {
    const here = this.section.dataset.folderId ?? ''
    const list = new UnfinishedList({
      before: this.list,
      choose: () => this.input.click(),
      forget: async ({ record }) => {
        await endpoint.cancel?.([record.grant]).catch(() => undefined)
        await store.delete(record.key)
      },
      place: (record: PageRecord) =>
        (record.folderId ?? '') === here ? '' : record.place || 'another folder',
      announce: (text) => {
        this.announce.textContent = text
      },
    })
    void unfinishedUploads(store, endpoint, (status) => status === 404)
      .then((found) => list.show(found))
      .finally(() => {
        this.unfinishedKnown = true
      })
    // A server slow to answer does not hold files chosen meanwhile for long: they go as new uploads.
    window.setTimeout(() => {
      this.unfinishedKnown = true
    }, 3000)
    return list
  }

  listen(): void {
    // Leaving the page (a folder, another page, a reload, closing the tab) while files go up ends their uploads:
    // the browser asks first.
    window.addEventListener('beforeunload', (event) => {
      if (this.queue.busy) event.preventDefault()
    })
    this.clear?.addEventListener('click', () => {
      for (const entry of this.entries.filter((each) => this.ended(each))) this.remove(entry)
      this.announce.textContent = 'Finished uploads cleared.'
      this.input.focus()
    })
    this.input.addEventListener('change', () => {
      void this.add([...(this.input.files ?? [])])
      this.input.value = ''
    })
    this.listenToDrops()
  }

  /** Dropping anywhere on the page: the overlay shows while files are dragged over it. */
  listenToDrops(): void {
    const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes('Files') ?? false
    const overlay = this.overlay
    document.addEventListener('dragenter', (event) => {
      if (!carriesFiles(event)) return
      event.preventDefault()
      this.depth++
      if (overlay) overlay.hidden = false
    })
    document.addEventListener('dragover', (event) => {
      if (carriesFiles(event)) event.preventDefault()
    })
    document.addEventListener('dragleave', (event) => {
      if (!carriesFiles(event)) return
      this.depth = Math.max(0, this.depth - 1)
      if (this.depth === 0 && overlay) overlay.hidden = true
    })
    document.addEventListener('drop', (event) => {
      if (!carriesFiles(event)) return
      event.preventDefault()
      this.depth = 0
      if (overlay) overlay.hidden = true
      void this.add([...(event.dataTransfer?.files ?? [])])
    })
  }

  async add(files: File[]): Promise<void> {
    if (files.length === 0) return
    if (!this.unfinishedKnown) {
      window.setTimeout(() => void this.add(files), 50)
      return
    }
    const fresh: Entry[] = []
    for (const file of files) {
      const problem =
        file.size === 0
          ? 'Not sent: the file is empty.'
          : file.size > this.maxFileSize
            ? `Not sent: larger than ${formatSize(this.maxFileSize)}, the most this server accepts.`
            : undefined
      const entry: Entry = {
        ...blobFile(file),
        file,
        problem,
        folderId: this.section.dataset.folderId ?? '',
        place: this.section.dataset.folderName ?? '',
        ...uploadRow(file, () => this.act(entry)),
      }
      this.entries.push(entry)
      this.list.prepend(entry.element)
      if (problem) this.render(entry)
      else fresh.push(entry)
      // The same file as an unfinished upload: it goes on where it stopped, into the folder it was going to.
      const unfinished = problem ? undefined : this.unfinished.take(file)
      if (unfinished) {
        const { record, stored } = unfinished
        entry.saved = { grant: record.grant, ...(record.uploadId ? { uploadId: record.uploadId } : {}) }
        entry.folderId = record.folderId ?? entry.folderId
        entry.place = record.place ?? entry.place
        if (entry.folderId !== (this.section.dataset.folderId ?? '')) {
          entry.elsewhere = `It goes to ${entry.place || 'its folder'}.`
        }
        markResumed(entry, stored, file.size, entry.elsewhere)
      }
    }
    this.announce.textContent = `${fresh.length} file${fresh.length === 1 ? '' : 's'} added to the uploads.`
    await this.queue.add(fresh)
  }

  /** What the entry's row shows: a failure that blames the file itself is a refusal, dismissed, not retried. */
  stateOf(entry: Entry): EntryState {
    const item = this.queue.itemOf(entry)
    if (!item) return 'refused'
    return item.failure?.step === 'prepare' && item.failure.blame === 'this' ? 'refused' : item.state
  }

  /** Whether an entry's upload has ended, one way or another: Clear finished removes its row. */
  ended(entry: Entry): boolean {
    return ['done', 'refused', 'failed', 'cancelled'].includes(this.stateOf(entry))
  }

  remove(entry: Entry): void {
    if (!this.entries.includes(entry)) return
    this.entries.splice(this.entries.indexOf(entry), 1)
    const item = this.queue.itemOf(entry)
    if (item) this.queue.remove(item)
    entry.element.remove()
    if (this.clear) this.clear.hidden = !this.entries.some((each) => this.ended(each))
  }

  /** The entry's button: cancel while it waits or sends, send again after a failure, clear a refusal. */
  act(entry: Entry): void {
    const item = this.queue.itemOf(entry)
    switch (this.stateOf(entry)) {
      case 'waiting':
      case 'uploading':
        if (item) void this.queue.cancel(item)
        return
      case 'failed':
      case 'cancelled':
        if (item) void this.queue.retry(item)
        return
      case 'refused':
      case 'done':
        this.remove(entry)
        this.input.focus()
        return
    }
  }

  render(entry: Entry): void {
    const item = this.queue.itemOf(entry)
    const state = this.stateOf(entry)
    if (item?.state === 'preparing') entry.progress.value = 0
    const message = !item
      ? (entry.problem ?? '')
      : item.failure
        ? failureMessage(item.failure)
        : item.state === 'done'
          ? `Uploaded · ${formatSize(entry.size)}`
          : (TEXTS[item.state] ?? '')
    showState(entry, entry.file, state, message, LABELS[state])
    if (this.clear) this.clear.hidden = !this.entries.some((each) => this.ended(each))
  }

  changed(items: UploadItem<Entry>[]): void {
    for (const item of items) this.render(item.file)
    const done = items.filter((item) => item.state === 'done')
    // An uploaded file's row goes by itself, unless the reader is on it (its Dismiss has the focus).
    for (const { file: entry } of done) {
      const leave = () => {
        if (entry.element.contains(document.activeElement)) window.setTimeout(leave, DONE_ROW_MS)
        else this.remove(entry)
      }
      window.setTimeout(leave, DONE_ROW_MS)
    }
    if (done.length > 0) this.announceUploaded(done)
  }

  /** Adds the rows of files the server has made to the table, as it renders them (GET /files/rows). */
  async showNewRows(complete: UploadItem<Entry>[]): Promise<void> {
    // A folder's page shows only its own files; every file shows on the page of all files.
    const here = this.section.dataset.folderId ?? ''
    const shown = complete.filter((item) => here === '' || item.file.folderId === here)
    if (shown.length === 0) return
    const ids = shown.map((item) => item.fileId).join(',')
    try {
      // Signed out, the rows are a redirect to sign in, not rows: not followed, and nothing is shown.
      const response = await fetch(`/files/rows?ids=${ids}`, {
        credentials: 'same-origin',
        redirect: 'manual',
      })
      if (response.ok && this.rows) {
        const template = document.createElement('template')
        template.innerHTML = await response.text()
        showLocalTimes(template.content)
        this.rows.prepend(template.content)
        if (this.tableWrap) this.tableWrap.hidden = false
        document.querySelector('.files-main .empty')?.remove()
      }
    } catch {
      // The files are stored; only their rows are missing until the next reload.
    }
  }

  announceUploaded(done: UploadItem<Entry>[]): void {
    const names = done.map(({ file }) => file.name)
    this.announce.textContent = `Uploaded: ${names.join(', ')}.`
    // Once every upload has ended, the focus goes to the newest file, unless the reader moved it elsewhere.
    const active = document.activeElement
    const idle = !active || active === document.body || this.section.contains(active)
    if (!this.queue.busy && idle) {
      this.rows
        ?.querySelector<HTMLAnchorElement>(`tr[data-file-id="${done[0]?.fileId}"] a.file-link`)
        ?.focus()
    }
  }
}

/** Why an upload failed, in words for the owner. */
function failureMessage(failure: UploadFailure): string {
  switch (failure.step) {
    case 'prepare':
      return failure.blame === 'another'
        ? 'Not sent, with another file that was refused. Retry to send it.'
        : refusalText(failure.error)
    case 'process':
      return failure.reason ?? 'The file could not be stored.'
    default:
      return failureText(failure.error)
  }
}

/** Why the server did not prepare an upload. */
function refusalText(error: unknown): string {
  const status = error instanceof CofferError ? error.status : 0
  if (status === 0) return 'The server could not be reached. Retry when you are back online.'
  if (status === 401) return 'You were signed out. Sign in again in another tab, then retry.'
  if (status === 403) return 'This page is out of date. Reload it, then upload again.'
  // Without the API's envelope, the SDK's error says so at length; the row says only the status.
  const envelope = error instanceof CofferError && error.code !== 'network_error'
  return `Not sent: ${envelope ? error.message : `the server answered ${status}.`}`
}

// Last: a class is not hoisted, so the uploader is set up once everything above is defined.
const uploader = document.querySelector<HTMLElement>('[data-uploader]')
if (uploader) new Uploader(uploader).listen()
