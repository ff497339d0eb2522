// Node only: a download written straight to a file, at the speed of the connection. Node's HTTP clients (fetch,
// undici, node:http) hand a body over as a new Buffer of at most 64 KiB at a time, each parsed, wrapped in a
// stream chunk and written on its own: that, not the network, held them to a half or a quarter of curl's speed
// here (bench/clients.ts). Here the socket is read straight into a few reused 1 MiB buffers (`onread`), each
// written to the file as it fills, so the work per byte is the kernel's copy and a write. It speaks just enough
// HTTP/1.1 for one GET: a status line, headers, and a body of known length. An answer it does not take that way
// (a chunked or encoded body, a redirect) is fetched again with `fetch`, the slower way.
import type { FileHandle } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { CofferError } from './errors.ts'

/** Where a download's bytes go. */
export interface FileTarget {
  path: string
  /** Appends a partial answer (206, a resumed download) to the file rather than replacing it. */
  append: boolean
  /** Called as the bytes are written, with how many so far. */
  onProgress?: (written: number) => void
}

const BUFFER_BYTES = 1 << 20
/** Buffers read into or being written at once. */
const BUFFERS = 4
/** A connection this long without a byte either way is given up on. */
const IDLE_MS = 300_000
/** A response head larger than this is not an HTTP server's answer to a GET. */
const MAX_HEAD_BYTES = 64 * 1024
/** An answer other than a success (an error envelope, a 429) is read into memory: at most this much of it. */
const MAX_OTHER_BODY_BYTES = 1 << 20

/**
 * A fetch for GETs whose successes (2xx) are written to `target`: the Response it resolves with has their status
 * and headers and no body, and comes once every byte is written. Any other answer is returned as fetch returns
 * it, so that retries, token refreshes and error envelopes work as for every other request.
 */
export function fetchToFile(
  target: FileTarget,
  how: { fallback: typeof fetch; overSocket: boolean },
): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url)
    const plain = request.method === 'GET' && (url.protocol === 'http:' || url.protocol === 'https:')
    if (how.overSocket && plain) {
      const answer = await overSocket(url, request, target)
      if (answer !== 'not taken') return answer
    }
    const response = await how.fallback(request)
    if (!response.ok) return response
    const [{ createWriteStream }, { Readable }, { pipeline }] = await Promise.all([
      import('node:fs'),
      import('node:stream'),
      import('node:stream/promises'),
    ])
    let written = 0
    let writeError: NodeJS.ErrnoException | undefined
    const file = createWriteStream(target.path, { flags: flags(target, response.status) }).on(
      'error',
      (error: NodeJS.ErrnoException) => {
        writeError = error
      },
    )
    // A success without a body (204) still leaves its file, empty, as the socket's path does.
    const body = response.body
      ? Readable.fromWeb(response.body as import('node:stream/web').ReadableStream)
      : Readable.from([])
    const counted = body.on('data', (chunk: Buffer) => {
      written += chunk.length
      target.onProgress?.(written)
    })
    await pipeline(counted, file, { signal: request.signal }).catch((error) => {
      throw writeError ? writeFailed(target, writeError) : error
    })
    return new Response(null, response)
  }
}

interface Head {
  status: number
  statusText: string
  headers: Headers
}

type Outcome = { response: Response } | { notTaken: true } | { error: unknown }

/** One GET over a connection of its own; 'not taken' for an answer to fetch again. */
async function overSocket(url: URL, request: Request, target: FileTarget): Promise<Response | 'not taken'> {
  const [net, tls, { open }] = await Promise.all([
    import('node:net'),
    import('node:tls'),
    import('node:fs/promises'),
  ])
  request.signal.throwIfAborted()
  return new Promise((resolve, reject) => {
    const download = new SocketDownload(url, request, target, open, (outcome) => {
      if ('error' in outcome) reject(outcome.error)
      else resolve('response' in outcome ? outcome.response : 'not taken')
    })
    download.start(net, tls)
  })
}

/**
 * The state of one GET over its own connection: the socket reads into a few reused buffers, the head first, then
 * the body, which goes to the file (a success) or to memory (any other answer). Settles once, with the outcome.
 */
class SocketDownload {
  readonly #url: URL
  readonly #request: Request
  readonly #target: FileTarget
  readonly #open: typeof import('node:fs/promises').open
  readonly #settle: (outcome: Outcome) => void
  readonly #free: Buffer[] = Array.from({ length: BUFFERS }, () => Buffer.allocUnsafe(BUFFER_BYTES))
  #socket: Socket | undefined
  #headBytes = Buffer.alloc(0)
  #head: Head | undefined
  #expected = 0
  #received = 0
  /** A success's body goes to the file; any other is collected, to be returned in memory. */
  #file: Promise<FileHandle> | undefined
  readonly #collected: Buffer[] = []
  #written = 0
  #writing: Promise<unknown> = Promise.resolve()
  #settled = false
  readonly #onAbort = () => this.#finish({ error: this.#request.signal.reason })

  constructor(
    url: URL,
    request: Request,
    target: FileTarget,
    open: typeof import('node:fs/promises').open,
    settle: (outcome: Outcome) => void,
  ) {
    this.#url = url
    this.#request = request
    this.#target = target
    this.#open = open
    this.#settle = settle
  }

  /** Connects, sends the GET once connected, and watches the connection until the outcome. */
  start(net: typeof import('node:net'), tls: typeof import('node:tls')): void {
    this.#request.signal.addEventListener('abort', this.#onAbort, { once: true })
    const url = this.#url
    const https = url.protocol === 'https:'
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const options = {
      host,
      port: Number(url.port) || (https ? 443 : 80),
      onread: {
        buffer: () => this.#free.pop() ?? Buffer.allocUnsafe(BUFFER_BYTES),
        callback: (length: number, buffer: Uint8Array) => this.#onRead(length, buffer),
      },
    }
    const socket: Socket = https
      ? tls.connect({ ...options, ...(net.isIP(host) ? {} : { servername: host }) })
      : net.connect(options)
    this.#socket = socket
    socket.once(https ? 'secureConnect' : 'connect', () =>
      socket.write(requestHead(url, this.#request), 'latin1'),
    )
    socket.on('error', (error) => this.#finish({ error }))
    // As fetch (undici) does: a connection silent for this long is given up.
    socket.setTimeout(IDLE_MS, () =>
      this.#finish({ error: new Error(`The server sent nothing for ${IDLE_MS / 1000} seconds.`) }),
    )
    socket.on('close', () => this.#onClose())
  }

  #finish(outcome: Outcome): void {
    if (this.#settled) return
    this.#settled = true
    this.#request.signal.removeEventListener('abort', this.#onAbort)
    this.#socket?.destroy()
    const opened = this.#file
    if (!opened) {
      this.#settle(outcome)
      return
    }
    // The writes end and the file is closed before the caller hears of the outcome.
    this.#writing
      .catch(() => undefined)
      .then(() => opened)
      .then((handle) => handle.close())
      .then(
        () => this.#settle(outcome),
        (error) => this.#settle('error' in outcome ? outcome : { error }),
      )
  }

  #onRead(length: number, buffer: Uint8Array): boolean {
    if (this.#settled) return false
    try {
      const bytes = buffer as Buffer
      if (this.#head) return this.#takeBody(bytes.subarray(0, length), () => this.#free.push(bytes))
      this.#free.push(bytes)
      return this.#takeHead(bytes.subarray(0, length))
    } catch (error) {
      this.#finish({ error })
      return false
    }
  }

  #takeHead(bytes: Buffer): boolean {
    this.#headBytes = Buffer.concat([this.#headBytes, bytes])
    const end = this.#headBytes.indexOf('\r\n\r\n')
    if (end === -1) {
      if (this.#headBytes.length > MAX_HEAD_BYTES) throw new Error('The response head is too large.')
      return true
    }
    const head = parseHead(this.#headBytes.subarray(0, end).toString('latin1'))
    this.#head = head
    const length = plainBodyLength(head)
    if (length === undefined) {
      this.#finish({ notTaken: true })
      return false
    }
    this.#expected = length
    if (head.status < 300) {
      const file = this.#open(this.#target.path, flags(this.#target, head.status))
      this.#file = file
      file.catch((error) => this.#finish({ error: writeFailed(this.#target, error) }))
    } else if (length > MAX_OTHER_BODY_BYTES) {
      throw new Error(`The server answered ${head.status} with ${length} bytes.`)
    }
    if (length === 0) {
      this.#finish({ response: new Response(this.#file ? null : '', head) })
      return false
    }
    const rest = Buffer.from(this.#headBytes.subarray(end + 4))
    return rest.length === 0 || this.#takeBody(rest, () => undefined)
  }

  /** Takes the body's bytes; false when the socket should wait for a buffer to be written. */
  #takeBody(bytes: Buffer, release: () => void): boolean {
    const wanted = bytes.subarray(0, this.#expected - this.#received)
    this.#received += wanted.length
    const opened = this.#file
    if (!opened) {
      this.#collected.push(Buffer.from(wanted))
      release()
      if (this.#received >= this.#expected) {
        this.#finish({ response: new Response(Buffer.concat(this.#collected), this.#head) })
      }
      return true
    }
    this.#writing = this.#writing
      .then(() => opened)
      .then((handle) => writeAll(handle, wanted))
      .then(() => {
        this.#written += wanted.length
        release()
        this.#target.onProgress?.(this.#written)
        if (this.#written >= this.#expected) this.#finish({ response: new Response(null, this.#head) })
        // Reading again if it stopped for want of a buffer (a no-op if it did not).
        else this.#socket?.resume()
      })
    this.#writing.catch((error) => this.#finish({ error: writeFailed(this.#target, error) }))
    // The socket takes the next buffer as this returns: it must leave one free.
    return this.#free.length > 1
  }

  /** A connection closed before the whole answer came: the download stopped short. */
  #onClose(): void {
    if (this.#head && this.#received >= this.#expected) return
    const got = this.#head ? `after ${this.#received} of ${this.#expected} bytes` : 'before it answered'
    this.#finish({
      error: new CofferError(
        0,
        'network_error',
        `The connection to ${this.#url.origin} closed ${got}.`,
        'Try again; a download to a file resumes where it stopped.',
      ),
    })
  }
}

/** The GET's head: the request's own headers, but `host` and `connection` this reader's. */
function requestHead(url: URL, request: Request): string {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, 'connection: close']
  request.headers.forEach((value, name) => {
    if (name !== 'host' && name !== 'connection') lines.push(`${name}: ${value}`)
  })
  return `${lines.join('\r\n')}\r\n\r\n`
}

const writeFailed = (target: FileTarget, error: NodeJS.ErrnoException) =>
  new CofferError(
    0,
    'write_failed',
    `Cannot write ${target.path}: ${error.code ?? error.message}.`,
    'Check that its directory exists and that the disk has room.',
    { cause: error },
  )

/** Appends only a partial answer: a server that ignored the range sends the whole file again. */
const flags = (target: FileTarget, status: number) => (target.append && status === 206 ? 'a' : 'w')

/** A file's write of all of `bytes` (a write may take fewer than it is given). */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let offset = 0; offset < bytes.length; ) {
    offset += (await handle.write(bytes, offset)).bytesWritten
  }
}

function parseHead(text: string): Head {
  const [statusLine = '', ...lines] = text.split('\r\n')
  const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine)
  if (!match) throw new Error(`The server did not answer in HTTP/1.1: ${statusLine.slice(0, 40)}`)
  const headers = new Headers()
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  return { status: Number(match[1]), statusText: match[2] ?? '', headers }
}

/**
 * The length of a body this reader takes as it comes, undefined for an answer to fetch again: a body of
 * unknown length (chunked), an encoded one, a redirect (fetch follows it), a 1xx.
 */
function plainBodyLength({ status, headers }: Head): number | undefined {
  if (status < 200 || (status >= 300 && status < 400 && status !== 304)) return undefined
  if (status === 204 || status === 304) return 0
  const encoding = headers.get('content-encoding') ?? 'identity'
  if (headers.has('transfer-encoding') || encoding !== 'identity') return undefined
  const length = Number(headers.get('content-length') ?? Number.NaN)
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined
}
