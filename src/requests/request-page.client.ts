/// <reference lib="dom" />
// The form of a file request's page (request-pages.views.ts), in the browser: files chosen or dropped are
// listed and checked against the request's limits; on Send, the submitter's fields are checked (the same rules
// as the server's, submission-rules.shared.ts), the uploads are prepared through the request's public API (the
// SDK's `publicRequests` calls), and each file's bytes go to the blob API with the SDK's transfer (in parts
// above 5 MiB, a failed part retried by the library), three at a time, each with its progress, speed and a
// Cancel button. Once stored, the uploads are followed through the status call, authorized by their grants in
// the body; a file that fails says why and can be sent again alone. A summary ends it.
import { formatSize } from '../format-size.shared.ts'
import { Coffer } from '../sdk/coffer.ts'
import { CofferError } from '../sdk/errors.ts'
import { sendBytes, type UploadGrant } from '../sdk/transfer.ts'
import {
  failureText,
  showProgress,
  showState,
  type UploadRow,
  uploadRow,
} from '../uploads/upload-items.client.ts'
import {
  checkSubmitter,
  describeAllowedTypes,
  isAcceptedType,
  type SubmitterFields,
} from './submission-rules.shared.ts'

/** Files sent at once; the others wait their turn. */
const CONCURRENT_UPLOADS = 3
/** A grant with less than this left is prepared again before its file is sent. */
const GRANT_MARGIN_MS = 60_000
const UNREACHABLE = 'The server could not be reached. Check your connection and send again.'
/** How often the status of stored uploads is asked for while they are processed. */
const STATUS_INTERVAL_MS = 500

type ItemState =
  | 'chosen'
  | 'refused'
  | 'waiting'
  | 'uploading'
  | 'processing'
  | 'done'
  | 'failed'
  | 'cancelled'

interface Item extends UploadRow {
  file: File
  state: ItemState
  grant?: UploadGrant
  controller?: AbortController
  message: string
  /** When its bytes began to go, for the speed shown. */
  startedAt: number
}

const form = document.querySelector<HTMLFormElement>('form[data-submission]')
if (form) setUp(form)

function setUp(form: HTMLFormElement): void {
  const data = form.dataset
  const blobApiUrl = data.blobApi ?? ''
  const publicId = data.publicId ?? ''
  // The public side of a request needs no credential: the grants in the bodies authorize the uploads. A refusal
  // (429 included) is shown at once, with its reason, rather than waited out behind "Preparing…".
  const coffer = new Coffer({ url: `${location.origin}${data.server ?? ''}`, retries: 0 })
  const maxFileSize = Number(data.maxFileSize)
  const maxFiles = data.maxFiles ? Number(data.maxFiles) : undefined
  const allowedTypes = JSON.parse(data.allowedTypes ?? '[]') as string[]
  const settings = {
    collectEmail: data.collectEmail === 'true',
    emailRequired: data.emailRequired === 'true',
  }
  const multipartThreshold = Number(data.multipartThreshold)
  const perPreparation = Number(data.perPreparation)

  const fileInput = form.querySelector<HTMLInputElement>('input[type="file"]') as HTMLInputElement
  const dropzone = form.querySelector<HTMLElement>('[data-dropzone]') as HTMLElement
  const list = form.querySelector<HTMLUListElement>('[data-file-list]') as HTMLUListElement
  const sendButton = form.querySelector<HTMLButtonElement>('[data-send]') as HTMLButtonElement
  const formError = form.querySelector<HTMLElement>('[data-form-error]') as HTMLElement
  const announce = form.querySelector<HTMLElement>('[data-announce]') as HTMLElement
  const summary = document.querySelector<HTMLElement>('[data-summary]') as HTMLElement
  const items: Item[] = []
  /** What the submitter typed, as checked when the files were sent: retries send it again. */
  let fields: SubmitterFields | undefined
  let statusTimer: number | undefined

  const textInputs = () => [
    ...form.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('input[name], textarea'),
  ]

  // --- Choosing files ------------------------------------------------------------------------------------

  fileInput.addEventListener('change', () => {
    addFiles(fileInput.files)
    fileInput.value = ''
  })
  for (const type of ['dragenter', 'dragover']) {
    dropzone.addEventListener(type, (event) => {
      event.preventDefault()
      dropzone.classList.add('dragging')
    })
  }
  for (const type of ['dragleave', 'drop']) {
    dropzone.addEventListener(type, () => dropzone.classList.remove('dragging'))
  }
  dropzone.addEventListener('drop', (event) => {
    event.preventDefault()
    addFiles(event.dataTransfer?.files ?? null)
  })

  function addFiles(files: FileList | null): void {
    if (!files || files.length === 0) return
    summary.hidden = true
    showFieldError('files', '')
    for (const file of files) {
      const item = newItem(file)
      const problem = fileProblem(file)
      if (problem) setState(item, 'refused', problem)
      else setState(item, 'chosen', formatSize(file.size))
      items.push(item)
      list.append(item.element)
    }
    const chosen = items.filter((item) => item.state === 'chosen').length
    announce.textContent = `${chosen} file${chosen === 1 ? '' : 's'} ready to send.`
    updateSendButton()
  }

  /** Why the request would refuse the file, checked before anything is sent. */
  function fileProblem(file: File): string | undefined {
    if (file.size === 0) return 'This file is empty.'
    if (file.size > maxFileSize)
      return `Too large: this request accepts files of up to ${formatSize(maxFileSize)}.`
    if (!isAcceptedType(file.name, file.type, allowedTypes)) {
      return `Not accepted: this request accepts ${describeAllowedTypes(allowedTypes)}.`
    }
    return undefined
  }

  function newItem(file: File): Item {
    const item: Item = {
      file,
      state: 'chosen',
      message: '',
      startedAt: 0,
      ...uploadRow(file, () => act(item)),
    }
    return item
  }

  /** The item's button: remove before sending, cancel while sending, send again after a failure. */
  function act(item: Item): void {
    switch (item.state) {
      case 'chosen':
      case 'refused':
        items.splice(items.indexOf(item), 1)
        item.element.remove()
        announce.textContent = `${item.file.name} removed.`
        updateSendButton()
        fileInput.focus()
        return
      case 'waiting':
      case 'uploading':
        void cancel(item)
        return
      case 'failed':
      case 'cancelled':
        void retry(item)
        return
    }
  }

  /** Each state's button: its label, and the action its accessible name starts with. */
  const LABELS: Partial<Record<ItemState, [string, string]>> = {
    chosen: ['Remove', 'Remove'],
    refused: ['Remove', 'Remove'],
    waiting: ['Cancel', 'Cancel the upload of'],
    uploading: ['Cancel', 'Cancel the upload of'],
    failed: ['Retry', 'Retry the upload of'],
    cancelled: ['Retry', 'Retry the upload of'],
  }

  function setState(item: Item, state: ItemState, message: string): void {
    item.state = state
    item.message = message
    showState(item, item.file, state, message, LABELS[state])
  }

  function updateSendButton(): void {
    const busy = items.some((item) => ['waiting', 'uploading', 'processing'].includes(item.state))
    sendButton.disabled = busy || !items.some((item) => item.state === 'chosen')
  }

  // --- Sending ---------------------------------------------------------------------------------------------

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void send()
  })

  async function send(): Promise<void> {
    clearErrors()
    const values = Object.fromEntries(textInputs().map((input) => [input.name, input.value]))
    const checked = checkSubmitter(values, settings)
    if ('problem' in checked) {
      showFieldError(checked.problem.field, checked.problem.message)
      return
    }
    const chosen = items.filter((item) => item.state === 'chosen')
    if (items.some((item) => item.state === 'refused')) {
      showFieldError('files', 'Remove the files this request does not accept, then send again.')
      return
    }
    if (chosen.length === 0) {
      showFieldError('files', 'Choose at least one file.')
      return
    }
    if (maxFiles !== undefined && chosen.length > maxFiles) {
      showFieldError('files', `This request accepts at most ${maxFiles} files in all. Remove some.`)
      return
    }
    fields = checked.fields
    sendButton.disabled = true
    for (let start = 0; start < chosen.length; start += perPreparation) {
      const batch = chosen.slice(start, start + perPreparation)
      if (!(await prepare(batch))) break
    }
    pump()
  }

  /** Prepares the uploads of `batch`; false, with the error shown, if the server refused. */
  async function prepare(batch: Item[]): Promise<boolean> {
    const answer = await requestGrants(batch)
    if ('refusal' in answer) {
      showServerError(answer.refusal, batch)
      updateSendButton()
      return false
    }
    setFieldsLocked(true)
    for (const [i, item] of batch.entries()) {
      item.grant = answer.grants[i]
      setState(item, 'waiting', 'Waiting to send…')
    }
    return true
  }

  /** The grants of `batch`'s uploads, or the server's refusal (or the failure to reach it). */
  async function requestGrants(batch: Item[]): Promise<{ grants: UploadGrant[] } | { refusal: CofferError }> {
    const files = batch.map((item) => ({
      name: item.file.name,
      type: item.file.type || 'application/octet-stream',
      size: item.file.size,
    }))
    try {
      const { uploads } = await coffer.publicRequests.prepareUploads(publicId, { ...fields, files })
      return { grants: uploads }
    } catch (error) {
      if (!(error instanceof CofferError)) throw error
      return { refusal: error }
    }
  }

  /** Starts uploads while fewer than CONCURRENT_UPLOADS are under way. */
  function pump(): void {
    let running = items.filter((item) => item.state === 'uploading').length
    for (const item of items) {
      if (running >= CONCURRENT_UPLOADS) break
      if (item.state !== 'waiting') continue
      running++
      void transfer(item)
    }
    updateSendButton()
    finishIfDone()
  }

  async function transfer(item: Item): Promise<void> {
    item.controller = new AbortController()
    setState(item, 'uploading', 'Starting…')
    try {
      if (!(await freshGrant(item))) return
      item.startedAt = performance.now()
      await sendBytes(item.grant as UploadGrant, item.file, {
        blobApiUrl,
        multipartThreshold,
        signal: item.controller.signal,
        onProgress: (loaded, total) => {
          if (item.state === 'uploading') showProgress(item, loaded, total, item.startedAt)
        },
      })
      setState(item, 'processing', 'Checking the file…')
      followStatus()
    } catch (error) {
      if (item.state === 'cancelled') return
      setState(item, 'failed', failureText(error))
    } finally {
      pump()
    }
  }

  /**
   * Makes sure the item's grant is still good when its turn comes: the server lets a grant go unused for only
   * ten minutes, so one that has waited that long is prepared again (the old one expires by itself). False,
   * with the row saying why, if the server refused, or if the file was cancelled meanwhile.
   */
  async function freshGrant(item: Item): Promise<boolean> {
    const grant = item.grant as UploadGrant
    if (Date.parse(grant.expiresAt) - Date.now() > GRANT_MARGIN_MS) return true
    const answer = await requestGrants([item])
    if ('refusal' in answer) {
      if (item.state === 'uploading') setState(item, 'failed', refusalText(answer.refusal))
      return false
    }
    item.grant = answer.grants[0]
    if (item.state !== 'cancelled') return true
    await granted('cancel', [item]).catch(() => undefined)
    return false
  }

  async function cancel(item: Item): Promise<void> {
    setState(item, 'cancelled', 'Cancelled.')
    item.controller?.abort()
    if (item.grant) await granted('cancel', [item]).catch(() => undefined)
    pump()
  }

  /** Sends one file again: a fresh preparation for it alone, after ending its old upload. */
  async function retry(item: Item): Promise<void> {
    if (item.grant) await granted('cancel', [item]).catch(() => undefined)
    item.grant = undefined
    item.progress.value = 0
    setState(item, 'chosen', formatSize(item.file.size))
    summary.hidden = true
    const answer = await requestGrants([item])
    if ('refusal' in answer) {
      setState(item, 'failed', refusalText(answer.refusal))
      updateSendButton()
      return
    }
    item.grant = answer.grants[0]
    setState(item, 'waiting', 'Waiting to send…')
    pump()
  }

  // --- Following the uploads -------------------------------------------------------------------------------

  function followStatus(): void {
    if (statusTimer !== undefined) return
    statusTimer = window.setTimeout(async () => {
      statusTimer = undefined
      const processing = items.filter((item) => item.state === 'processing')
      if (processing.length === 0) return
      try {
        const statuses = await granted('status', processing)
        for (const [i, item] of processing.entries()) {
          const status = statuses[i]
          if (item.state !== 'processing' || !status) continue
          if (status.status === 'complete') setState(item, 'done', 'Received.')
          else if (status.status === 'error')
            setState(item, 'failed', status.error ?? 'The file could not be received.')
        }
      } catch {
        // The server may be restarting; ask again.
      }
      if (items.some((item) => item.state === 'processing')) followStatus()
      finishIfDone()
    }, STATUS_INTERVAL_MS)
  }

  /** Calls the status or cancel operation for `targets`, each named by its grant in the body. */
  function granted(operation: 'status', targets: Item[]): Promise<{ status: string; error?: string }[]>
  function granted(operation: 'cancel', targets: Item[]): Promise<unknown>
  function granted(operation: 'status' | 'cancel', targets: Item[]) {
    const uploads = targets.map((item) => ({
      intentId: item.grant?.intentId ?? '',
      grant: item.grant?.clientPayload.grant ?? '',
    }))
    return operation === 'status'
      ? coffer.publicRequests.uploadStatus(publicId, { uploads })
      : coffer.publicRequests.cancelUploads(publicId, { uploads })
  }

  // --- The end -----------------------------------------------------------------------------------------------

  function finishIfDone(): void {
    const sent = items.filter((item) => item.state !== 'chosen' && item.state !== 'refused')
    if (sent.length === 0) return
    if (sent.some((item) => ['waiting', 'uploading', 'processing'].includes(item.state))) return
    const done = sent.filter((item) => item.state === 'done')
    const failed = sent.filter((item) => item.state === 'failed')
    const title = summary.querySelector('[data-summary-title]') as HTMLElement
    const text = summary.querySelector('[data-summary-text]') as HTMLElement
    const summaryList = summary.querySelector('[data-summary-list]') as HTMLElement
    title.textContent =
      done.length === sent.length
        ? `${done.length} file${done.length === 1 ? '' : 's'} sent`
        : `${done.length} of ${sent.length} files sent`
    text.textContent =
      failed.length > 0
        ? `${failed.length} could not be sent; use Retry beside ${failed.length === 1 ? 'it' : 'each'} to send it again.`
        : 'The person who asked for them has received them. You can close this page.'
    summaryList.replaceChildren(
      ...done.map((item) => {
        const li = document.createElement('li')
        li.textContent = `${item.file.name} (${formatSize(item.file.size)})`
        return li
      }),
    )
    summary.hidden = false
    summary.focus()
    updateSendButton()
  }

  summary.querySelector('[data-send-more]')?.addEventListener('click', () => {
    for (const item of items.splice(0)) item.element.remove()
    summary.hidden = true
    setFieldsLocked(false)
    updateSendButton()
    fileInput.focus()
  })

  // --- Errors --------------------------------------------------------------------------------------------------

  function clearErrors(): void {
    for (const element of form.querySelectorAll<HTMLElement>('[data-error-for]')) {
      element.hidden = true
      element.textContent = ''
    }
    for (const input of textInputs()) input.removeAttribute('aria-invalid')
    formError.hidden = true
    formError.textContent = ''
  }

  /** Shows `message` under the field (none: hides it) and moves the focus there. */
  function showFieldError(field: string, message: string): void {
    const element = form.querySelector<HTMLElement>(`[data-error-for="${field}"]`)
    if (!element) {
      showFormError(message)
      return
    }
    element.textContent = message
    element.hidden = message === ''
    const input = field === 'files' ? fileInput : form.querySelector<HTMLElement>(`[name="${field}"]`)
    if (message && input) {
      if (field !== 'files') input.setAttribute('aria-invalid', 'true')
      input.focus()
    }
  }

  function showFormError(message: string): void {
    formError.textContent = message
    formError.hidden = false
  }

  /** A refusal of the server, shown beside its field, or beside its file, or above the Send button. */
  function showServerError(refusal: CofferError, batch: Item[]): void {
    const message = refusal.code === 'network_error' ? UNREACHABLE : refusal.message
    const field = refusal.field ?? ''
    const file = /^files\[(\d+)\]/.exec(field)
    const item = file ? batch[Number(file[1])] : undefined
    if (item) {
      setState(item, 'refused', message)
      showFieldError('files', 'Remove the files this request does not accept, then send again.')
    } else if (['submitterName', 'submitterEmail', 'message', 'files'].includes(field)) {
      showFieldError(field, message)
    } else {
      showFormError(message)
    }
  }

  /** A file's row after the server refused to prepare it. */
  function refusalText(refusal: CofferError): string {
    if (refusal.code === 'network_error') return UNREACHABLE
    return `Not sent: ${refusal.message} Retry to send it again.`
  }

  function setFieldsLocked(locked: boolean): void {
    for (const input of textInputs()) input.readOnly = locked
  }
}
