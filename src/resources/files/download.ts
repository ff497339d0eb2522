// The HTTP side of serving a file's bytes: validators, conditional requests, byte ranges, Content-Disposition
// and which content types a browser may render. Kept apart from the route so that every place that serves
// file bytes (the API download, public share links) answers the same way. A download reads in a straight line:
// `planDownload` decides the answer from the request and the file; `openDownload` opens the blob once (or finds
// how nginx or the object store will send it, `DownloadHandoff`), so that a store that fails does so before
// anything is counted; a share link then admits (counts) the planned bytes; `send` sends what was admitted; an
// answer cut short settles the bytes it did not send.
import type { IncomingHttpHeaders } from 'node:http'
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BlobStore, ByteRange } from '../../platform/blob/blob-store.ts'
import { type Config, ConfigError } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import { httpDate, parseHttpDate } from '../../platform/http/http-date.ts'
import { essenceOf } from '../../platform/media-types.ts'
import type { FileContent, ServedFile } from './file-content.ts'

export type Disposition = 'attachment' | 'inline'

/**
 * Sent with every download, whatever the status: the bytes are the uploader's, so the browser must not sniff
 * another type, and a document rendered from them gets no scripts, no plugins, no forms and an opaque
 * origin. Media and inline styles stay allowed so built-in image, audio and video viewers still work.
 */
export const DOWNLOAD_SAFETY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox",
  // Framed only by Coffer's own pages (a PDF's viewer), never by another site.
  'x-frame-options': 'SAMEORIGIN',
  // Private: the bytes belong to one account. no-cache: revalidate (a cheap 304) on every use, so a deleted
  // file or a revoked credential stops working at once.
  'cache-control': 'private, no-cache',
} as const

const OCTET_STREAM = 'application/octet-stream'

/**
 * Types a browser renders without running anything the file brings along. SVG (scriptable), HTML, XML and
 * anything unknown are served as application/octet-stream when shown inline. Some browsers refuse to show a
 * PDF in a sandboxed document and offer to save it instead.
 */
export const INLINE_SAFE_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'application/pdf',
  'text/plain',
  'text/csv',
  'audio/mpeg',
  'audio/mp4',
  'audio/aac',
  'audio/ogg',
  'audio/opus',
  'audio/wav',
  'audio/webm',
  'audio/flac',
  'video/mp4',
  'video/webm',
  'video/ogg',
])

const TOKEN = '[A-Za-z0-9!#$&^_.+-]+'
// type/subtype with optional parameters; quoted values in printable ASCII only, so the header is always valid.
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`,
)

/** The Content-Type to send: the stored type when it is well-formed and, for `inline`, safe to render. */
export function downloadContentType(stored: string, disposition: Disposition): string {
  if (!MEDIA_TYPE.test(stored)) return OCTET_STREAM
  if (disposition === 'attachment') return stored
  return INLINE_SAFE_TYPES.has(essenceOf(stored)) ? stored : OCTET_STREAM
}

// RFC 8187 attr-char: the bytes that may stand for themselves in an ext-value.
const ATTR_CHAR = /^[A-Za-z0-9!#$&+.^_`|~-]$/

/**
 * `attachment; filename="ascii fallback"; filename*=UTF-8''percent-encoded`: clients that know RFC 8187
 * (every current browser) use the exact name; older ones get the name with every character outside
 * printable ASCII replaced by `_`.
 */
export function contentDisposition(disposition: Disposition, name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]/gu, '_').replace(/["\\]/g, '\\$&')
  let encoded = ''
  // Encoding the UTF-8 bytes by hand never throws, unlike encodeURIComponent on a lone surrogate.
  for (const byte of Buffer.from(name, 'utf8')) {
    const char = String.fromCharCode(byte)
    encoded += ATTR_CHAR.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

/** A strong validator: the bytes of a file never change, so its checksum (or, lacking one, its id) names them. */
export function entityTag(file: { id: string; sha256: string | null }): string {
  return `"${file.sha256 ?? file.id}"`
}

/** HTTP dates have whole seconds; comparisons use the time truncated the same way. */
const toSecond = (ms: number) => Math.floor(ms / 1000) * 1000

const opaqueTag = (tag: string) => tag.replace(/^W\//, '')

function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return typeof value === 'string' ? value : undefined
}

/** If-None-Match (weak comparison, `*` matches), else If-Modified-Since, as RFC 9110 section 13.2.2 orders them. */
export function isNotModified(headers: IncomingHttpHeaders, etag: string, lastModified: number): boolean {
  const ifNoneMatch = single(headers, 'if-none-match')
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() === '*') return true
    const tags = ifNoneMatch.match(/(?:W\/)?"[^"]*"/g) ?? []
    return tags.some((tag) => opaqueTag(tag) === etag)
  }
  const since = parseHttpDate(single(headers, 'if-modified-since') ?? '')
  return since !== undefined && toSecond(lastModified) <= since
}

/**
 * The part of a `size`-byte file to send: undefined for all of it (no Range, a Range this server ignores, or
 * an If-Range that no longer matches), or one inclusive range, or 'unsatisfiable' (416). Only a single range
 * is served; a request for several gets the whole file, as RFC 9110 allows. A syntactically invalid Range is
 * ignored.
 */
export function requestedRange(
  headers: IncomingHttpHeaders,
  size: number,
  etag: string,
  lastModified: number,
): ByteRange | 'unsatisfiable' | undefined {
  const header = single(headers, 'range')
  if (header === undefined) return undefined
  const ifRange = single(headers, 'if-range')
  if (ifRange !== undefined && !ifRangeMatches(ifRange.trim(), etag, lastModified)) return undefined
  const match = /^bytes[ \t]*=(.*)$/i.exec(header.trim())
  if (!match?.[1]) return undefined
  const specs = match[1]
    .split(',')
    .map((spec) => spec.trim())
    .filter(Boolean)
  const spec = specs.length === 1 ? /^(\d*)[ \t]*-[ \t]*(\d*)$/.exec(specs[0] ?? '') : null
  if (!spec) return undefined
  const [, first = '', last = ''] = spec
  if (first === '') {
    if (last === '') return undefined
    const suffix = Number(last)
    if (suffix === 0) return 'unsatisfiable'
    // An empty file has no byte to name in Content-Range; it is sent whole (and empty).
    if (size === 0) return undefined
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? Number.POSITIVE_INFINITY : Number(last)
  if (end < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

/** If-Range needs a strong match: the exact entity tag, or exactly the Last-Modified date. */
function ifRangeMatches(ifRange: string, etag: string, lastModified: number): boolean {
  if (ifRange.startsWith('"') || ifRange.startsWith('W/')) return ifRange === etag
  return parseHttpDate(ifRange) === toSecond(lastModified)
}

/**
 * Downloads whose bytes someone else sends, once Coffer has authenticated, authorized, answered 304 and 416
 * itself, and a share link admitted the download (counted it):
 * - nginx (DOWNLOAD_ACCEL_REDIRECT; README, "Downloads through nginx"): an answer with the download's headers,
 *   `X-Accel-Redirect: <prefix><blob path>` and no body; nginx serves the file from its internal location.
 * - the object store (DOWNLOAD_REDIRECT=presigned; README, "Blobs in S3-compatible storage"): a redirect to a
 *   presigned GET of the object, valid for a minute, that makes the store answer with Coffer's Content-Type and
 *   Content-Disposition.
 * Either way the client's own Range goes to the one that sends, so only a plain one is handed off (see
 * `sentAlike`); a missing blob is still Coffer's own 404. Set once on the app by app.ts and read here through
 * `reply.server`, so that every caller of `openDownload` gets it without asking.
 */
export interface DownloadHandoff {
  /**
   * Whether the bytes go out through a redirect (a presigned URL), which its client may follow more than once
   * while it lasts, rather than through nginx's internal location, which only this answer reaches.
   */
  redirects: boolean
  /** How the blob's bytes go out without Coffer, or undefined when the blob is missing. */
  handOff(blobKey: string, headers: DownloadHeaders): Promise<Handoff | undefined>
}

type DownloadHeaders = {
  'content-type': string
  'content-disposition': string
}

type Handoff = { accelTarget: string } | { redirectTo: string }

/** How long a presigned download URL works: enough to follow the redirect, not to share the link. */
export const PRESIGNED_DOWNLOAD_SECONDS = 60

declare module 'fastify' {
  interface FastifyInstance {
    /** Null: Coffer streams the bytes itself. */
    downloadHandoff: DownloadHandoff | null
  }
}

/**
 * What app.ts decorates the app with: null unless DOWNLOAD_ACCEL_REDIRECT or DOWNLOAD_REDIRECT is set. nginx can
 * serve only files on its own disk, and only an object store can presign; another store is a configuration error
 * at start.
 */
export function downloadHandoff(
  config: Pick<Config, 'downloadAccelRedirect' | 'downloadRedirect'>,
  blobs: BlobStore,
): DownloadHandoff | null {
  const prefix = config.downloadAccelRedirect
  if (prefix !== undefined) {
    const relativePath = blobs.relativePath?.bind(blobs)
    if (!relativePath) {
      throw new ConfigError(
        'DOWNLOAD_ACCEL_REDIRECT needs blobs on the local disk (DATA_DIR/blobs/), which nginx serves itself; ' +
          'unset it for any other blob store',
      )
    }
    return {
      redirects: false,
      handOff: async (blobKey) => {
        const relative = await relativePath(blobKey)
        return relative === undefined ? undefined : { accelTarget: prefix + relative }
      },
    }
  }
  if (config.downloadRedirect === 'presigned') {
    const presignedGet = blobs.presignedGet?.bind(blobs)
    if (!presignedGet) {
      throw new ConfigError(
        'DOWNLOAD_REDIRECT=presigned needs BLOB_STORE=s3: only an object store can presign',
      )
    }
    return {
      redirects: true,
      handOff: async (blobKey, headers) => {
        if ((await blobs.stat(blobKey)) === undefined) return undefined
        const redirectTo = await presignedGet(blobKey, {
          contentType: headers['content-type'],
          contentDisposition: headers['content-disposition'],
          expiresInSeconds: PRESIGNED_DOWNLOAD_SECONDS,
        })
        return { redirectTo }
      },
    }
  }
  return null
}

// The one form of Range that nginx and the object store read exactly as `requestedRange` does: a single
// range, no spaces, numbers small enough that neither side overflows.
const PLAIN_RANGE = /^bytes=(?:\d{1,15}-\d{0,15}|-\d{1,15})$/i

/**
 * Whether nginx or the object store, reading the request's own Range, sends what Coffer decided (and charged a
 * limited link's pass for): the whole file when there is no Range, else `range` when the Range has the plain
 * form and any If-Range is exactly one of the validators Coffer sends with the bytes (its ETag, or its
 * Last-Modified as written), which both read alike. Anything else is streamed by Coffer itself: a Range of
 * another form (several ranges, spaces, a reversed one that Coffer ignores), and an If-Range in any other
 * spelling, which the sender might read otherwise than Coffer (nginx took an ISO 8601 date, which Coffer then
 * read as a match, for a mismatch, and sent the whole file for a range Coffer charged one byte of).
 */
function sentAlike(
  headers: IncomingHttpHeaders,
  range: ByteRange | undefined,
  validators: { etag: string; lastModified: string },
): boolean {
  const header = single(headers, 'range')
  if (header === undefined) return true
  if (range === undefined || !PLAIN_RANGE.test(header)) return false
  const ifRange = headers['if-range']
  return ifRange === undefined || ifRange === validators.etag || ifRange === validators.lastModified
}

/**
 * What a download answers, decided from the request and the file alone, before any byte is read or counted:
 * a 304, a 416, the headers of a HEAD, or bytes `start` to `end` inclusive (the whole file when `range` is
 * undefined). A share link admits `bytes` before they are sent; nothing else needs to.
 */
export type DownloadPlan = {
  file: ServedFile
  /** Sent with every answer: the safety headers and the validators. */
  headers: Record<string, string>
  /** Sent with the bytes (or with a HEAD's headers of them). */
  contentHeaders: DownloadHeaders
} & (
  | { kind: 'not-modified' }
  | { kind: 'unsatisfiable' }
  | { kind: 'headers'; range: ByteRange | undefined }
  | {
      kind: 'bytes'
      range: ByteRange | undefined
      start: number
      end: number
      /** Whether nginx or the object store, reading the request's own Range, would send these bytes. */
      handOffAlike: boolean
    }
)

/**
 * The plan of a GET or HEAD for `file`'s bytes: validators and safety headers (`cacheControl` replaces the
 * safety headers' `private, no-cache` for bytes that never change under their address, a preview in the
 * owner's pages), 304 for a current copy, 416 for a range outside the file, a single range, or the whole file.
 */
export function planDownload(
  request: Pick<FastifyRequest, 'method' | 'headers'>,
  file: ServedFile,
  disposition: Disposition,
  { cacheControl }: { cacheControl?: string } = {},
): DownloadPlan {
  const etag = entityTag(file)
  const lastModified = httpDate(file.createdAt)
  const common = {
    file,
    headers: {
      ...DOWNLOAD_SAFETY_HEADERS,
      ...(cacheControl ? { 'cache-control': cacheControl } : {}),
      etag,
      'last-modified': lastModified,
      'accept-ranges': 'bytes',
    },
    contentHeaders: {
      'content-type': downloadContentType(file.contentType, disposition),
      'content-disposition': contentDisposition(disposition, file.name),
    },
  }
  if (isNotModified(request.headers, etag, file.createdAt)) return { ...common, kind: 'not-modified' }
  const range = requestedRange(request.headers, file.size, etag, file.createdAt)
  if (range === 'unsatisfiable') return { ...common, kind: 'unsatisfiable' }
  if (request.method === 'HEAD') return { ...common, kind: 'headers', range }
  return {
    ...common,
    kind: 'bytes',
    range,
    start: range?.start ?? 0,
    end: range?.end ?? file.size - 1,
    handOffAlike: sentAlike(request.headers, range, { etag, lastModified }),
  }
}

/** What a share link admitted of a planned download of bytes. */
export interface Admitted {
  /** The last byte admitted, when it is before the plan's: a pass with fewer bytes left gets a shorter 206. */
  end?: number
  /**
   * Settles an answer that ended before all its bytes went out (its client went away): called with how many
   * were not sent, so that a download pass gets them back. What the socket wrote counts as sent (headers
   * included), so it gets back a little less, never more.
   */
  unsent?(bytes: number): Promise<void>
}

/** A planned download whose bytes are ready to go: the blob open, or the sender that takes them over found. */
export interface OpenedDownload {
  /** Sends the answer, with the bytes admitted (all the plan's when nothing limits them). */
  send(admitted?: Admitted): Promise<FastifyReply>
  /** Closes the blob unread: the download was refused. */
  discard(): void
}

/**
 * Gets the bytes of `plan` ready before anything is counted: finds nginx's path or presigns the object store's
 * address when the plan is theirs to send alike (`DownloadHandoff`; never a redirect when `countedExactly`, a
 * link with a download limit, whose URL its client could follow again for more than was counted), or else
 * opens the blob, once. A store that fails or lacks the blob fails the download here (503, 404), before a
 * share link counts it: a count is of a download that went out.
 */
export async function openDownload(
  reply: FastifyReply,
  plan: DownloadPlan,
  content: FileContent,
  { countedExactly = false } = {},
): Promise<OpenedDownload> {
  // Whatever the answer turns out to be, a missing blob's 404 included.
  reply.headers(plan.headers)
  if (plan.kind === 'not-modified' || plan.kind === 'unsatisfiable') {
    return { send: async () => answerWithoutBytes(reply, plan), discard() {} }
  }
  const handoff = reply.server.downloadHandoff
  if (plan.kind === 'bytes' && plan.handOffAlike && handoff && !(handoff.redirects && countedExactly)) {
    const to = await handoff.handOff(plan.file.blobKey, plan.contentHeaders)
    if (to !== undefined) {
      return {
        // The sender sends what the client's Range asks for: fewer bytes than that, Coffer sends itself.
        send: async (admitted = {}) =>
          admitted.end !== undefined && admitted.end < plan.end
            ? sendBytes(reply, plan, await content.open(plan.range), admitted)
            : handedOff(reply, plan, to),
        discard() {},
      }
    }
  }
  // HEAD too, which must answer as GET would (a missing blob is a 404), and then closes it unread.
  const body = await content.open(plan.range)
  return {
    send: async (admitted = {}) => sendBytes(reply, plan, body, admitted),
    discard: () => body.destroy(),
  }
}

/** Opens and sends in one, for the downloads nothing admits (the owner's, previews). */
export async function sendFileContent(
  request: FastifyRequest,
  reply: FastifyReply,
  content: FileContent,
  disposition: Disposition,
  options: { cacheControl?: string } = {},
): Promise<FastifyReply> {
  const plan = planDownload(request, content.file, disposition, options)
  return (await openDownload(reply, plan, content)).send()
}

/** A 304, or a 416 thrown as the error it is (its Content-Range set). */
function answerWithoutBytes(reply: FastifyReply, plan: DownloadPlan): FastifyReply {
  const { file } = plan
  if (plan.kind === 'not-modified') return reply.status(304).send()
  reply.header('content-range', `bytes */${file.size}`)
  throw new AppError(
    'range_not_satisfiable',
    `The Range header asks for bytes outside file ${file.id}, which has ${file.size} bytes.`,
  )
}

/**
 * Streams the plan's bytes from the open blob, ended early at the last byte admitted (the rest of the open
 * range is never read); for HEAD, the headers alone.
 */
function sendBytes(
  reply: FastifyReply,
  plan: DownloadPlan & { kind: 'headers' | 'bytes' },
  body: Readable,
  admitted: Admitted,
): FastifyReply {
  const { file } = plan
  reply.headers(plan.contentHeaders)
  let range = plan.range
  let sent: Readable | undefined = body
  if (plan.kind === 'headers') {
    body.destroy()
    sent = undefined
  } else if (admitted.end !== undefined && admitted.end < plan.end) {
    range = { start: plan.start, end: admitted.end }
    sent = Readable.from(upTo(body, admitted.end - plan.start + 1))
  }
  const length = range ? range.end - range.start + 1 : file.size
  if (sent && admitted.unsent) settleUnsent(reply, length, admitted.unsent)
  if (range) {
    reply.status(206).header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
  }
  reply.header('content-length', length)
  return reply.send(sent)
}

/** The first `length` bytes of `body`, which is closed once they have gone (or the reader stops). */
async function* upTo(body: Readable, length: number): AsyncGenerator<Buffer> {
  let left = length
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (chunk.length >= left) {
        yield chunk.subarray(0, left)
        return
      }
      left -= chunk.length
      yield chunk
    }
  } finally {
    body.destroy()
  }
}

/** Hands the answer to nginx (X-Accel-Redirect) or to the object store (a redirect to its presigned URL). */
function handedOff(reply: FastifyReply, plan: DownloadPlan, to: Handoff): FastifyReply {
  // nginx adds its own Accept-Ranges; a redirect's validators and download headers come with the bytes, from
  // the store.
  reply.removeHeader('accept-ranges')
  if ('redirectTo' in to) {
    reply.removeHeader('etag')
    reply.removeHeader('last-modified')
    return reply.redirect(to.redirectTo, 302)
  }
  // nginx keeps Content-Type, Content-Disposition and Cache-Control of this answer; the internal location adds
  // back the rest (README).
  reply.headers({ ...plan.contentHeaders, 'x-accel-redirect': to.accelTarget })
  return reply.send()
}

/** Calls `unsent` with the bytes of `length` the answer did not write, if it closes before it finishes. */
function settleUnsent(reply: FastifyReply, length: number, unsent: (bytes: number) => Promise<void>): void {
  const response = reply.raw
  // An injected request (tests, in-process callers) has no real socket to count bytes on: what the answer was
  // handed whole then is what was sent.
  const counted = typeof response.socket?.bytesWritten === 'number'
  const written = () => response.socket?.bytesWritten ?? 0
  const before = written()
  response.once('close', () => {
    if (response.writableFinished || (!counted && response.writableEnded)) return
    const sent = Math.max(0, written() - before)
    unsent(Math.max(0, length - sent)).catch((error: unknown) =>
      reply.log.error({ err: error }, 'giving back the unsent bytes of a download pass failed'),
    )
  })
}
