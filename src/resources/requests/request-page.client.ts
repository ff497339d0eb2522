/// <reference lib="dom" />
// The form of a file request's page (request-pages.views.ts), in the browser: files chosen or dropped are
// listed and checked against the request's limits; on Send, the submitter's fields are checked (the same rules
// as the server's, submission-rules.shared.ts) and the files go to the SDK's upload queue (sdk/upload-queue.ts)
// through the request's public API (sdk/upload-endpoints.ts): prepared in batches, each file's bytes sent to
// the blob API (in parts above 5 MiB, a failed part retried by the library), three at a time, each with its
// progress, speed and a Cancel button, then followed through the status call, authorized by their grants in
// the body; a file that fails says why and can be sent again alone. A summary ends it.
// Uploads resume: each upload's record is kept in IndexedDB (one database per request), the uploads a reload, a
// closed tab or a lost connection left unfinished are listed when the page opens, and a file chosen again that
// matches one (name, size, last modified) goes at once, sending only the parts the server lacks: its grant
// carries what the submitter typed when it was first sent, so nothing needs to be typed again for it.

import { Coffer } from '../../clients/sdk/coffer.ts'
import { CofferError } from '../../clients/sdk/errors.ts'
import { indexedDbResumeStore } from '../../clients/sdk/resume-indexeddb.ts'
import { publicRequestUploads } from '../../clients/sdk/upload-endpoints.ts'
import {
  blobFile,
  type QueuedFile,
  type UploadFailure,
  type UploadItem,
  UploadQueue,
  type UploadState,
} from '../../clients/sdk/upload-queue.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import {
  failureText,
  keepForResuming,
  markResumed,
  showProgress,
  showState,
  UnfinishedList,
  UPLOAD_BUTTONS,
  UPLOAD_TEXTS,
  type UploadRow,
  unfinishedUploads,
  uploadRow,
} from '../../platform/web/upload-items.client.ts'
import {
  checkSubmitter,
  describeAllowedTypes,
  isAcceptedType,
  type SubmitterFields,
} from './submission-rules.shared.ts'

const UNREACHABLE = 'The server could not be reached. Check your connection and send again.'
/** What the row of a file that resumes adds: its grant carries what the submitter typed the first time. */
const RESUMED_NOTE = 'It goes with the details you gave the first time: no need to type them again.'

/**
 * A file on the page: chosen, or refused by the request's limits (or by the server), until it is sent; from
 * then on its state is its upload's.
 */
interface Entry extends QueuedFile, UploadRow {
  file: File
  local: 'chosen' | 'refused'
  /** Why it is refused. */
  problem: string
  /** Sent at once to go on with an unfinished upload, with the details typed the first time. */
  resumed?: boolean
}

/** What a file's row shows: its own state before it is sent, its upload's after. */
type EntryState = Entry['local'] | UploadState

/** Each state's button (web/upload-items.client.ts), and Remove for a file not sent. */
const LABELS: Partial<Record<EntryState, [string, string]>> = {
  chosen: ['Remove', 'Remove'],
  refused: ['Remove', 'Remove'],
  ...UPLOAD_BUTTONS,
}

/** The words each state of an upload shows; a failure says why. */
const TEXTS: Partial<Record<UploadState, string>> = { ...UPLOAD_TEXTS, done: 'Received.' }

class RequestForm {
  readonly form: HTMLFormElement
  readonly fileInput: HTMLInputElement
  readonly dropzone: HTMLElement
  readonly list: HTMLUListElement
  readonly sendButton: HTMLButtonElement
  readonly formError: HTMLElement
  readonly announce: HTMLElement
  readonly summary: HTMLElement
  readonly maxFileSize: number
  readonly maxFiles: number | undefined
  readonly allowedTypes: string[]
  readonly emailSettings: { collectEmail: boolean; emailRequired: boolean }
  readonly entries: Entry[] = []
  readonly queue: UploadQueue<Entry>
  readonly unfinished: UnfinishedList
  /** Whether the unfinished uploads are known (listed): files chosen before wait for them. */
  unfinishedKnown = false
  /** What the submitter typed, as checked when the files were sent: retries send it again. */
  fields: SubmitterFields | undefined

  constructor(form: HTMLFormElement) {
    const data = form.dataset
    this.form = form
    this.fileInput = form.querySelector<HTMLInputElement>('input[type="file"]') as HTMLInputElement
    this.dropzone = form.querySelector<HTMLElement>('[data-dropzone]') as HTMLElement
    this.list = form.querySelector<HTMLUListElement>('[data-file-list]') as HTMLUListElement
    this.sendButton = form.querySelector<HTMLButtonElement>('[data-send]') as HTMLButtonElement
    this.formError = form.querySelector<HTMLElement>('[data-form-error]') as HTMLElement
    this.announce = form.querySelector<HTMLElement>('[data-announce]') as HTMLElement
    this.summary = document.querySelector<HTMLElement>('[data-summary]') as HTMLElement
    this.maxFileSize = Number(data.maxFileSize)
    this.maxFiles = data.maxFiles ? Number(data.maxFiles) : undefined
    this.allowedTypes = JSON.parse(data.allowedTypes ?? '[]') as string[]
    this.emailSettings = {
      collectEmail: data.collectEmail === 'true',
      emailRequired: data.emailRequired === 'true',
    }
    // The public side of a request needs no credential: the grants in the bodies authorize the uploads. A refusal
    // (429 included) is shown at once, with its reason, rather than waited out behind "Preparing…".
    const coffer = new Coffer({ url: `${location.origin}${data.server ?? ''}`, retries: 0 })
    const endpoint = publicRequestUploads(coffer, {
      publicId: data.publicId ?? '',
      submitter: () => this.fields ?? {},
      transfer: { blobApiUrl: data.blobApi ?? '', multipartThreshold: Number(data.multipartThreshold) },
    })
    const store = indexedDbResumeStore(`coffer-request-uploads ${data.publicId ?? ''}`)
    this.queue = new UploadQueue<Entry>({
      endpoint,
      perPreparation: Number(data.perPreparation),
      renewGrants: true,
      onChange: (items) => this.changed(items),
      onProgress: (item, loaded, total) =>
        showProgress(item.file, loaded, total, item.startedAt, item.resumedBytes),
      onIdle: () => this.finishIfDone(),
      onResume: (item) =>
        markResumed(item.file, item.resumedBytes, item.file.size, item.file.resumed ? RESUMED_NOTE : ''),
      ...keepForResuming<Entry>(store),
    })
    this.unfinished = new UnfinishedList({
      before: this.list,
      choose: () => this.fileInput.click(),
      forget: async ({ record }) => {
        await endpoint.cancel?.([record.grant]).catch(() => undefined)
        await store.delete(record.key)
      },
      announce: (text) => {
        this.announce.textContent = text
      },
    })
    // An upload the server no longer knows, or of a request closed since, is refused (401, 404).
    void unfinishedUploads(store, endpoint, (status) => [401, 404, 410].includes(status))
      .then((found) => this.unfinished.show(found))
      .finally(() => {
        this.unfinishedKnown = true
      })
    // A server slow to answer does not hold files chosen meanwhile for long: they go as new uploads.
    window.setTimeout(() => {
      this.unfinishedKnown = true
    }, 3000)
  }

  listen(): void {
    this.fileInput.addEventListener('change', () => {
      this.addFiles([...(this.fileInput.files ?? [])])
      this.fileInput.value = ''
    })
    for (const type of ['dragenter', 'dragover']) {
      this.dropzone.addEventListener(type, (event) => {
        event.preventDefault()
        this.dropzone.classList.add('dragging')
      })
    }
    for (const type of ['dragleave', 'drop']) {
      this.dropzone.addEventListener(type, () => this.dropzone.classList.remove('dragging'))
    }
    this.dropzone.addEventListener('drop', (event) => {
      event.preventDefault()
      this.addFiles([...(event.dataTransfer?.files ?? [])])
    })
    this.form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.send()
    })
    this.summary.querySelector('[data-send-more]')?.addEventListener('click', () => this.sendMore())
  }

  textInputs(): (HTMLInputElement | HTMLTextAreaElement)[] {
    return [...this.form.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('input[name], textarea')]
  }

  // --- Choosing files ------------------------------------------------------------------------------------

  addFiles(files: File[]): void {
    if (files.length === 0) return
    if (!this.unfinishedKnown) {
      window.setTimeout(() => this.addFiles(files), 50)
      return
    }
    this.summary.hidden = true
    this.showFieldError('files', '')
    const resumed: Entry[] = []
    for (const file of files) {
      const problem = this.fileProblem(file)
      const entry: Entry = {
        ...blobFile(file),
        file,
        local: problem ? 'refused' : 'chosen',
        problem: problem ?? '',
        ...uploadRow(file, () => this.act(entry)),
      }
      // The same file as an unfinished upload: it goes at once, with its grant and what was typed then.
      const unfinished = problem ? undefined : this.unfinished.take(file)
      if (unfinished) {
        const { record, stored } = unfinished
        entry.saved = { grant: record.grant, ...(record.uploadId ? { uploadId: record.uploadId } : {}) }
        entry.resumed = true
        markResumed(entry, stored, file.size, RESUMED_NOTE)
        resumed.push(entry)
      }
      this.render(entry)
      this.entries.push(entry)
      this.list.append(entry.element)
    }
    if (resumed.length > 0) void this.queue.add(resumed)
    const chosen = this.entries.filter((entry) => this.stateOf(entry) === 'chosen').length
    this.announce.textContent = `${chosen} file${chosen === 1 ? '' : 's'} ready to send.`
    this.updateSendButton()
  }

  /** Why the request would refuse the file, checked before anything is sent. */
  fileProblem(file: File): string | undefined {
    if (file.size === 0) return 'This file is empty.'
    if (file.size > this.maxFileSize)
      return `Too large: this request accepts files of up to ${formatSize(this.maxFileSize)}.`
    if (!isAcceptedType(file.name, file.type, this.allowedTypes)) {
      return `Not accepted: this request accepts ${describeAllowedTypes(this.allowedTypes)}.`
    }
    return undefined
  }

  stateOf(entry: Entry): EntryState {
    return this.queue.itemOf(entry)?.state ?? entry.local
  }

  /** The entry's button: remove before sending, cancel while sending, send again after a failure. */
  act(entry: Entry): void {
    const item = this.queue.itemOf(entry)
    switch (this.stateOf(entry)) {
      case 'chosen':
      case 'refused':
      case 'preparing':
        if (item) this.queue.remove(item)
        this.entries.splice(this.entries.indexOf(entry), 1)
        entry.element.remove()
        this.announce.textContent = `${entry.file.name} removed.`
        this.updateSendButton()
        this.fileInput.focus()
        return
      case 'waiting':
      case 'uploading':
        if (item) void this.queue.cancel(item)
        return
      case 'failed':
      case 'cancelled':
        if (item) void this.queue.retry(item)
        return
    }
  }

  /** Shows the entry's state on its row; a file being prepared still shows as chosen. */
  render(entry: Entry): void {
    const item = this.queue.itemOf(entry)
    if (!item || item.state === 'preparing') {
      if (item) entry.progress.value = 0
      const local = item ? 'chosen' : entry.local
      const message = local === 'refused' ? entry.problem : formatSize(entry.size)
      showState(entry, entry.file, local, message, LABELS[local])
      return
    }
    const message = item.failure ? failureMessage(item.failure) : (TEXTS[item.state] ?? '')
    showState(entry, entry.file, item.state, message, LABELS[item.state])
  }

  changed(items: UploadItem<Entry>[]): void {
    for (const item of items) this.render(item.file)
    if (items.some((item) => item.state === 'preparing')) this.summary.hidden = true
    // The fields lock once files go with them; a file resumed goes with those typed the first time.
    if (items.some((item) => item.state === 'waiting' && !item.file.resumed)) this.setFieldsLocked(true)
    this.updateSendButton()
  }

  updateSendButton(): void {
    const states = this.entries.map((entry) => this.stateOf(entry))
    this.sendButton.disabled = this.queue.busy || !states.includes('chosen')
  }

  // --- Sending ---------------------------------------------------------------------------------------------

  async send(): Promise<void> {
    this.clearErrors()
    const values = Object.fromEntries(this.textInputs().map((input) => [input.name, input.value]))
    const checked = checkSubmitter(values, this.emailSettings)
    if ('problem' in checked) {
      this.showFieldError(checked.problem.field, checked.problem.message)
      return
    }
    const chosen = this.entries.filter((entry) => this.stateOf(entry) === 'chosen')
    if (this.entries.some((entry) => this.stateOf(entry) === 'refused')) {
      this.showFieldError('files', 'Remove the files this request does not accept, then send again.')
      return
    }
    if (chosen.length === 0) {
      this.showFieldError('files', 'Choose at least one file.')
      return
    }
    if (this.maxFiles !== undefined && chosen.length > this.maxFiles) {
      this.showFieldError('files', `This request accepts at most ${this.maxFiles} files in all. Remove some.`)
      return
    }
    this.fields = checked.fields
    this.sendButton.disabled = true
    // A refused preparation stops the sending: its files, and those after it, stay chosen.
    const stopped = await this.queue.add(chosen, { stopAtRefusal: true })
    if (!stopped) return
    for (const entry of chosen) this.render(entry)
    this.showServerError(stopped.refusal, stopped.batch)
    this.updateSendButton()
  }

  // --- The end -----------------------------------------------------------------------------------------------

  finishIfDone(): void {
    const sent = this.entries.flatMap((entry) => this.queue.itemOf(entry) ?? [])
    // Files chosen and not sent yet (beside one resumed at once) wait for Send: no summary before.
    const waiting = this.entries.some((entry) => this.stateOf(entry) === 'chosen')
    if (sent.length === 0 || this.queue.busy || waiting) return
    const done = sent.filter((item) => item.state === 'done')
    const failed = sent.filter((item) => item.state === 'failed')
    const title = this.summary.querySelector('[data-summary-title]') as HTMLElement
    const text = this.summary.querySelector('[data-summary-text]') as HTMLElement
    const summaryList = this.summary.querySelector('[data-summary-list]') as HTMLElement
    title.textContent =
      done.length === sent.length
        ? `${done.length} file${done.length === 1 ? '' : 's'} sent`
        : `${done.length} of ${sent.length} files sent`
    text.textContent =
      failed.length > 0
        ? `${failed.length} could not be sent; use Retry beside ${failed.length === 1 ? 'it' : 'each'} to send it again.`
        : 'The person who asked for them has received them. You can close this page.'
    summaryList.replaceChildren(
      ...done.map(({ file }) => {
        const li = document.createElement('li')
        li.textContent = `${file.name} (${formatSize(file.size)})`
        return li
      }),
    )
    this.summary.hidden = false
    this.summary.focus()
    this.updateSendButton()
  }

  sendMore(): void {
    for (const entry of this.entries.splice(0)) {
      const item = this.queue.itemOf(entry)
      if (item) this.queue.remove(item)
      entry.element.remove()
    }
    this.summary.hidden = true
    this.setFieldsLocked(false)
    this.updateSendButton()
    this.fileInput.focus()
  }

  // --- Errors --------------------------------------------------------------------------------------------------

  clearErrors(): void {
    for (const element of this.form.querySelectorAll<HTMLElement>('[data-error-for]')) {
      element.hidden = true
      element.textContent = ''
    }
    for (const input of this.textInputs()) input.removeAttribute('aria-invalid')
    this.formError.hidden = true
    this.formError.textContent = ''
  }

  /** Shows `message` under the field (none: hides it) and moves the focus there. */
  showFieldError(field: string, message: string): void {
    const element = this.form.querySelector<HTMLElement>(`[data-error-for="${field}"]`)
    if (!element) {
      this.showFormError(message)
      return
    }
    element.textContent = message
    element.hidden = message === ''
    const input =
      field === 'files' ? this.fileInput : this.form.querySelector<HTMLElement>(`[name="${field}"]`)
    if (message && input) {
      if (field !== 'files') input.setAttribute('aria-invalid', 'true')
      input.focus()
    }
  }

  showFormError(message: string): void {
    this.formError.textContent = message
    this.formError.hidden = false
  }

  /** A refusal of the server, shown beside its field, or beside its file, or above the Send button. */
  showServerError(refusal: unknown, batch: Entry[]): void {
    if (!(refusal instanceof CofferError)) throw refusal
    const message = refusal.code === 'network_error' ? UNREACHABLE : refusal.message
    const field = refusal.field ?? ''
    const file = /^files\[(\d+)\]/.exec(field)
    const entry = file ? batch[Number(file[1])] : undefined
    if (entry) {
      entry.local = 'refused'
      entry.problem = message
      this.render(entry)
      this.showFieldError('files', 'Remove the files this request does not accept, then send again.')
    } else if (['submitterName', 'submitterEmail', 'message', 'files'].includes(field)) {
      this.showFieldError(field, message)
    } else {
      this.showFormError(message)
    }
  }

  setFieldsLocked(locked: boolean): void {
    for (const input of this.textInputs()) input.readOnly = locked
  }
}

/** Why an upload failed, in words for the person who sent it. */
function failureMessage(failure: UploadFailure): string {
  switch (failure.step) {
    case 'prepare':
      return failure.error instanceof CofferError ? refusalText(failure.error) : failureText(failure.error)
    case 'process':
      return failure.reason ?? 'The file could not be received.'
    default:
      return failureText(failure.error)
  }
}

/** A file's row after the server refused to prepare it. */
function refusalText(refusal: CofferError): string {
  if (refusal.code === 'network_error') return UNREACHABLE
  return `Not sent: ${refusal.message} Retry to send it again.`
}

// Last: a class is not hoisted, so the page's form is set up once everything above is defined.
const form = document.querySelector<HTMLFormElement>('form[data-submission]')
if (form) new RequestForm(form).listen()
