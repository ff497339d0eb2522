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
import { formatSize } from '../format-size.shared.ts'
import { sendBytes, type UploadGrant } from '../sdk/transfer.ts'
import {
  failureText,
  showProgress,
  showState,
  type UploadRow,
  uploadRow,
} from '../uploads/upload-items.client.ts'
import { showLocalTimes } from '../web/local-times.client.ts'

/** Files sent at once; the others wait their turn. */
const CONCURRENT_UPLOADS = 3
/** How often the status of stored uploads is asked for while the server processes them. */
const STATUS_INTERVAL_MS = 400
/** How long an uploaded file's row stays in the list: its row in the table of files says the rest. */
const DONE_ROW_MS = 5000

type State =
  | 'refused'
  | 'preparing'
  | 'waiting'
  | 'uploading'
  | 'processing'
  | 'done'
  | 'failed'
  | 'cancelled'

interface Item extends UploadRow {
  file: File
  state: State
  grant?: UploadGrant
  controller?: AbortController
  startedAt: number
}

interface ApiError {
  error?: { code?: string; message?: string; field?: string }
}

setUpSelection()
const uploader = document.querySelector<HTMLElement>('[data-uploader]')
if (uploader) setUpUploads(uploader)

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

function setUpUploads(section: HTMLElement): void {
  const data = section.dataset
  const blobApiUrl = data.blobApi ?? ''
  const maxFileSize = Number(data.maxFileSize)
  const multipartThreshold = Number(data.multipartThreshold)
  const perPreparation = Number(data.perPreparation) || 100
  const folderId = data.folderId || null
  const csrf = data.csrf ?? ''
  const input = section.querySelector<HTMLInputElement>('input[type="file"]') as HTMLInputElement
  const list = section.querySelector<HTMLUListElement>('[data-upload-list]') as HTMLUListElement
  const announce = section.querySelector<HTMLElement>('[data-upload-announce]') as HTMLElement
  const overlay = document.querySelector<HTMLElement>('[data-drop-overlay]')
  const rows = document.querySelector<HTMLElement>('[data-file-rows]')
  const tableWrap = document.querySelector<HTMLElement>('[data-table-wrap]')
  const clear = section.querySelector<HTMLButtonElement>('[data-upload-clear]')
  const items: Item[] = []
  let statusTimer: number | undefined
  section.hidden = false

  /** Whether an upload is still under way: leaving the page would end it. */
  const busy = () =>
    items.some((item) => ['preparing', 'waiting', 'uploading', 'processing'].includes(item.state))
  // Leaving the page (a folder, another page, a reload, closing the tab) while files go up ends their uploads:
  // the browser asks first.
  window.addEventListener('beforeunload', (event) => {
    if (busy()) event.preventDefault()
  })

  /** Whether an item's upload has ended, one way or another: Clear finished removes its row. */
  const ended = (item: Item) => ['done', 'refused', 'failed', 'cancelled'].includes(item.state)
  const remove = (item: Item) => {
    if (!items.includes(item)) return
    items.splice(items.indexOf(item), 1)
    item.element.remove()
    if (clear) clear.hidden = !items.some(ended)
  }
  clear?.addEventListener('click', () => {
    for (const item of items.filter(ended)) remove(item)
    announce.textContent = 'Finished uploads cleared.'
    input.focus()
  })

  input.addEventListener('change', () => {
    add([...(input.files ?? [])])
    input.value = ''
  })

  // Dropping anywhere on the page: the overlay shows while files are dragged over it.
  let depth = 0
  const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes('Files') ?? false
  document.addEventListener('dragenter', (event) => {
    if (!carriesFiles(event)) return
    event.preventDefault()
    depth++
    if (overlay) overlay.hidden = false
  })
  document.addEventListener('dragover', (event) => {
    if (carriesFiles(event)) event.preventDefault()
  })
  document.addEventListener('dragleave', (event) => {
    if (!carriesFiles(event)) return
    depth = Math.max(0, depth - 1)
    if (depth === 0 && overlay) overlay.hidden = true
  })
  document.addEventListener('drop', (event) => {
    if (!carriesFiles(event)) return
    event.preventDefault()
    depth = 0
    if (overlay) overlay.hidden = true
    add([...(event.dataTransfer?.files ?? [])])
  })

  async function add(files: File[]): Promise<void> {
    if (files.length === 0) return
    const fresh: Item[] = []
    for (const file of files) {
      const item = newItem(file)
      items.push(item)
      list.prepend(item.element)
      const problem =
        file.size === 0
          ? 'Not sent: the file is empty.'
          : file.size > maxFileSize
            ? `Not sent: larger than ${formatSize(maxFileSize)}, the most this server accepts.`
            : undefined
      if (problem) setState(item, 'refused', problem)
      else fresh.push(item)
    }
    announce.textContent = `${fresh.length} file${fresh.length === 1 ? '' : 's'} added to the uploads.`
    for (let start = 0; start < fresh.length; start += perPreparation) {
      await prepare(fresh.slice(start, start + perPreparation))
    }
    pump()
  }

  function newItem(file: File): Item {
    const item: Item = { file, state: 'preparing', startedAt: 0, ...uploadRow(file, () => act(item)) }
    setState(item, 'preparing', 'Preparing…')
    return item
  }

  /** The item's button: cancel while it waits or sends, send again after a failure, clear a refusal. */
  function act(item: Item): void {
    switch (item.state) {
      case 'waiting':
      case 'uploading':
        void cancel(item)
        return
      case 'failed':
      case 'cancelled':
        void retry(item)
        return
      case 'refused':
      case 'done':
        remove(item)
        input.focus()
        return
    }
  }

  /** Each state's button: its label, and the action its accessible name starts with. */
  const LABELS: Partial<Record<State, [string, string]>> = {
    waiting: ['Cancel', 'Cancel the upload of'],
    uploading: ['Cancel', 'Cancel the upload of'],
    failed: ['Retry', 'Retry the upload of'],
    cancelled: ['Retry', 'Retry the upload of'],
    refused: ['Dismiss', 'Dismiss'],
    done: ['Dismiss', 'Dismiss'],
  }

  function setState(item: Item, state: State, message: string): void {
    item.state = state
    showState(item, item.file, state, message, LABELS[state])
    if (clear) clear.hidden = !items.some(ended)
    // An uploaded file's row goes by itself, unless the reader is on it (its Dismiss has the focus).
    if (state === 'done') {
      const leave = () => {
        if (item.element.contains(document.activeElement)) window.setTimeout(leave, DONE_ROW_MS)
        else remove(item)
      }
      window.setTimeout(leave, DONE_ROW_MS)
    }
  }

  /** A call of the session's upload endpoints, with the CSRF token; refusals come back as the envelope. */
  async function call(path: string, body: unknown): Promise<Response> {
    return fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify(body),
      credentials: 'same-origin',
    })
  }

  async function prepare(batch: Item[]): Promise<void> {
    const body = {
      folderId,
      files: batch.map((item) => ({
        name: item.file.name,
        type: item.file.type || 'application/octet-stream',
        size: item.file.size,
      })),
    }
    let response: Response
    try {
      response = await call('/uploads', body)
    } catch {
      for (const item of batch)
        setState(item, 'failed', 'The server could not be reached. Retry when you are back online.')
      return
    }
    const answer = (await response.json().catch(() => ({}))) as ApiError & {
      data?: { uploads: UploadGrant[] }
    }
    if (response.status !== 201 || !answer.data) {
      const message = refusal(response, answer)
      const at = /^files\[(\d+)\]/.exec(answer.error?.field ?? '')
      const culprit = at ? batch[Number(at[1])] : undefined
      for (const item of batch) {
        if (culprit && item !== culprit)
          setState(item, 'failed', 'Not sent, with another file that was refused. Retry to send it.')
        else setState(item, culprit ? 'refused' : 'failed', message)
      }
      return
    }
    for (const [i, item] of batch.entries()) {
      item.grant = answer.data.uploads[i]
      setState(item, 'waiting', 'Waiting to send…')
    }
  }

  function refusal(response: Response, answer: ApiError): string {
    if (response.status === 401) return 'You were signed out. Sign in again in another tab, then retry.'
    if (response.status === 403) return 'This page is out of date. Reload it, then upload again.'
    return `Not sent: ${answer.error?.message ?? `the server answered ${response.status}.`}`
  }

  function pump(): void {
    let running = items.filter((item) => item.state === 'uploading').length
    for (const item of [...items].reverse()) {
      if (running >= CONCURRENT_UPLOADS) break
      if (item.state !== 'waiting') continue
      running++
      void transfer(item)
    }
  }

  async function transfer(item: Item): Promise<void> {
    const grant = item.grant as UploadGrant
    item.controller = new AbortController()
    item.startedAt = performance.now()
    setState(item, 'uploading', 'Starting…')
    try {
      await sendBytes(grant, item.file, {
        blobApiUrl,
        multipartThreshold,
        signal: item.controller.signal,
        onProgress: (loaded, total) => {
          if (item.state === 'uploading') showProgress(item, loaded, total, item.startedAt)
        },
      })
      setState(item, 'processing', 'Checking the file…')
      follow()
    } catch (error) {
      if (item.state !== 'cancelled') setState(item, 'failed', failureText(error))
    } finally {
      pump()
    }
  }

  async function cancel(item: Item): Promise<void> {
    setState(item, 'cancelled', 'Cancelled.')
    item.controller?.abort()
    if (item.grant) await call('/uploads/cancel', { intentIds: [item.grant.intentId] }).catch(() => undefined)
    pump()
  }

  async function retry(item: Item): Promise<void> {
    if (item.grant) await call('/uploads/cancel', { intentIds: [item.grant.intentId] }).catch(() => undefined)
    item.grant = undefined
    item.progress.value = 0
    setState(item, 'preparing', 'Preparing…')
    await prepare([item])
    pump()
  }

  /** Asks for the status of the uploads being processed until none is; adds the rows of those done. */
  function follow(): void {
    if (statusTimer !== undefined) return
    statusTimer = window.setTimeout(async () => {
      statusTimer = undefined
      const processing = items.filter((item) => item.state === 'processing' && item.grant)
      if (processing.length === 0) return
      const done: { item: Item; fileId: string }[] = []
      try {
        const response = await call('/uploads/status', {
          intentIds: processing.map((item) => item.grant?.intentId),
        })
        const statuses =
          (
            (await response.json()) as {
              data?: { status: string; error?: string; result?: { id: string } }[]
            }
          ).data ?? []
        for (const [i, item] of processing.entries()) {
          const status = statuses[i]
          if (item.state !== 'processing' || !status) continue
          if (status.status === 'complete' && status.result) done.push({ item, fileId: status.result.id })
          else if (status.status === 'error')
            setState(item, 'failed', status.error ?? 'The file could not be stored.')
        }
      } catch {
        // The server may be restarting: ask again.
      }
      if (done.length > 0) await showNewRows(done)
      if (items.some((item) => item.state === 'processing')) follow()
    }, STATUS_INTERVAL_MS)
  }

  async function showNewRows(done: { item: Item; fileId: string }[]): Promise<void> {
    const ids = done.map(({ fileId }) => fileId).join(',')
    try {
      // Signed out, the rows are a redirect to sign in, not rows: not followed, and nothing is shown.
      const response = await fetch(`/files/rows?ids=${ids}`, {
        credentials: 'same-origin',
        redirect: 'manual',
      })
      if (response.ok && rows) {
        const template = document.createElement('template')
        template.innerHTML = await response.text()
        showLocalTimes(template.content)
        rows.prepend(template.content)
        if (tableWrap) tableWrap.hidden = false
        document.querySelector('.files-main .empty')?.remove()
      }
    } catch {
      // The files are stored; only their rows are missing until the next reload.
    }
    for (const { item } of done) setState(item, 'done', `Uploaded · ${formatSize(item.file.size)}`)
    const names = done.map(({ item }) => item.file.name)
    announce.textContent = `Uploaded: ${names.join(', ')}.`
    // Once every upload has ended, the focus goes to the newest file, unless the reader moved it elsewhere.
    const active = document.activeElement
    const idle = !active || active === document.body || section.contains(active)
    if (!busy() && idle)
      rows?.querySelector<HTMLAnchorElement>(`tr[data-file-id="${done[0]?.fileId}"] a.file-link`)?.focus()
  }
}
