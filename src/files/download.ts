// The HTTP side of serving a file's bytes: validators, conditional requests, byte ranges, Content-Disposition
// and which content types a browser may render. Kept apart from the route so that every place that serves
// file bytes (the API download, public share links) answers the same way, through `sendFileContent`; behind
// nginx with DOWNLOAD_ACCEL_REDIRECT set, it hands the sending of the bytes to nginx (see `DownloadAccel`).
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BlobStore, ByteRange } from '../blob/blob-store.ts'
import { LocalBlobStore } from '../blob/local-blob-store.ts'
import { S3BlobStore } from '../blob/s3-blob-store.ts'
import { type Config, ConfigError } from '../config.ts'
import { AppError } from '../errors.ts'
import type { FileContent } from './file-content.ts'

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
  const essence = (stored.split(';')[0] ?? '').trim().toLowerCase()
  return INLINE_SAFE_TYPES.has(essence) ? stored : OCTET_STREAM
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

export function httpDate(ms: number): string {
  return new Date(ms).toUTCString()
}

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
  const since = Date.parse(single(headers, 'if-modified-since') ?? '')
  return !Number.isNaN(since) && toSecond(lastModified) <= since
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
  const date = Date.parse(ifRange)
  return !Number.isNaN(date) && date === toSecond(lastModified)
}

/** What a download answer delivers, as settled before anything is sent. */
export type Delivery =
  /** 304: the client's copy is current. */
  | { kind: 'not-modified' }
  /** HEAD: the headers a GET would get, no bytes. */
  | { kind: 'headers' }
  /** 200 or 206: bytes `start` to `end`, inclusive (0 to the last for the whole file). */
  | { kind: 'bytes'; start: number; end: number }

/**
 * Downloads whose bytes someone else sends, once Coffer has authenticated, authorized, answered 304, 416 and a
 * missing blob itself, and run `beforeSend` (a share link counts its download there):
 * - nginx (DOWNLOAD_ACCEL_REDIRECT; README, "Downloads through nginx"): an answer with the download's headers,
 *   `X-Accel-Redirect: <prefix><blob path>` and no body; nginx serves the file from its internal location.
 * - the object store (DOWNLOAD_REDIRECT=presigned; README, "Blobs in S3-compatible storage"): a redirect to a
 *   presigned GET of the object, valid for a minute, that makes the store answer with Coffer's Content-Type and
 *   Content-Disposition.
 * Either way the client's own Range goes to the one that sends, so only a plain one is handed off (see
 * `sentAlike`). Set once on the app by app.ts and read here through `request.server`, so that every caller of
 * `sendFileContent` gets it without asking.
 */
export interface DownloadHandoff {
  /** How the blob's bytes go out without Coffer, or undefined when the blob is missing. */
  handOff(blobKey: string, headers: DownloadHeaders): Promise<Handoff | undefined>
}

interface DownloadHeaders {
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
    if (!(blobs instanceof LocalBlobStore)) {
      throw new ConfigError(
        'DOWNLOAD_ACCEL_REDIRECT needs blobs on the local disk (DATA_DIR/blobs/), which nginx serves itself; ' +
          'unset it for any other blob store',
      )
    }
    return {
      handOff: async (blobKey) => {
        const relative = await blobs.relativePath(blobKey)
        return relative === undefined ? undefined : { accelTarget: prefix + relative }
      },
    }
  }
  if (config.downloadRedirect === 'presigned') {
    if (!(blobs instanceof S3BlobStore)) {
      throw new ConfigError(
        'DOWNLOAD_REDIRECT=presigned needs BLOB_STORE=s3: only an object store can presign',
      )
    }
    return {
      handOff: async (blobKey, headers) => {
        if ((await blobs.stat(blobKey)) === undefined) return undefined
        const redirectTo = await blobs.presignedGet(blobKey, {
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

// The one form of Range that nginx reads exactly as `requestedRange` does: a single range, no spaces, numbers
// small enough that neither side overflows. With Coffer's validators put back in its internal location
// (examples/nginx.conf), so that it judges If-Range as Coffer did, nginx then sends the range Coffer settled on.
const PLAIN_RANGE = /^bytes=(?:\d{1,15}-\d{0,15}|-\d{1,15})$/i

/**
 * Whether nginx or the object store, reading the request's own Range, sends what Coffer decided: the whole file
 * when there is no Range, else `range` when the Range has the plain form. Any other Range, which common clients
 * never send (several ranges, spaces, a reversed or stale one that Coffer ignores), is streamed by Coffer itself.
 */
function sentAlike(headers: IncomingHttpHeaders, range: ByteRange | undefined): boolean {
  const header = single(headers, 'range')
  if (header === undefined) return true
  return range !== undefined && PLAIN_RANGE.test(header)
}

export interface SendOptions {
  /**
   * Runs once the answer is settled and the blob is open, before anything is sent; throwing refuses the
   * download (the blob is closed unread). Share links count a download here, so that a count is committed
   * before the bytes go out and a refused download sends none. Returning an earlier `end` sends fewer bytes
   * of a range than it asked for (a 206 saying which): a limited link's download pass with fewer left.
   */
  beforeSend?(delivery: Delivery): Promise<{ end: number } | undefined>
  /**
   * Replaces the safety headers' `private, no-cache` for bytes that can never change under their address (a
   * preview in the owner's pages): the browser then keeps them without asking again.
   */
  cacheControl?: string
}

/**
 * Answers a GET or HEAD for a file's bytes: validators and safety headers, 304 for a current copy, 206 for a
 * single range (416 outside the file), else the whole file, streamed from the store (or sent by nginx, see
 * `DownloadAccel`).
 */
export async function sendFileContent(
  request: FastifyRequest,
  reply: FastifyReply,
  { file, open }: FileContent,
  disposition: Disposition,
  options: SendOptions = {},
): Promise<FastifyReply> {
  const etag = entityTag(file)
  reply.headers({
    ...DOWNLOAD_SAFETY_HEADERS,
    ...(options.cacheControl ? { 'cache-control': options.cacheControl } : {}),
    etag,
    'last-modified': httpDate(file.createdAt),
    'accept-ranges': 'bytes',
  })
  if (isNotModified(request.headers, etag, file.createdAt)) {
    await options.beforeSend?.({ kind: 'not-modified' })
    reply.status(304)
    return reply.send()
  }
  const requested = requestedRange(request.headers, file.size, etag, file.createdAt)
  if (requested === 'unsatisfiable') {
    reply.header('content-range', `bytes */${file.size}`)
    throw new AppError(
      'range_not_satisfiable',
      `The Range header asks for bytes outside file ${file.id}, which has ${file.size} bytes.`,
    )
  }
  let range = requested
  const asked: Delivery = { kind: 'bytes', start: range?.start ?? 0, end: range?.end ?? file.size - 1 }
  /** What `beforeSend` said of the bytes; asked once, whoever sends them. */
  let decided: { end: number } | undefined | 'not yet' = 'not yet'
  const contentHeaders = {
    'content-type': downloadContentType(file.contentType, disposition),
    'content-disposition': contentDisposition(disposition, file.name),
  }
  const handoff = request.method === 'GET' ? request.server.downloadHandoff : null
  if (handoff && sentAlike(request.headers, range)) {
    // A missing blob falls through to `open`, which logs it and answers Coffer's own 404.
    const to = await handoff.handOff(file.blobKey, contentHeaders)
    if (to !== undefined) {
      decided = await options.beforeSend?.(asked)
      // The sender sends what the client's Range asks for: fewer bytes than that, Coffer sends itself.
      if (decided === undefined) {
        if ('redirectTo' in to) {
          // The validators and download headers go with the bytes, from the store.
          reply.removeHeader('accept-ranges')
          reply.removeHeader('etag')
          reply.removeHeader('last-modified')
          return reply.redirect(to.redirectTo, 302)
        }
        // nginx keeps Content-Type, Content-Disposition and Cache-Control of this answer and adds its own
        // Accept-Ranges; the internal location adds back the rest (README).
        reply.removeHeader('accept-ranges')
        reply.headers({ ...contentHeaders, 'x-accel-redirect': to.accelTarget })
        return reply.send()
      }
    }
  }
  // Opened before the content headers are set, so a missing blob is still answered as an error; for HEAD
  // too, which must answer as GET would, and then closed unread.
  let body: Readable | undefined = await open(range)
  if (request.method === 'HEAD') {
    body.destroy()
    body = undefined
  }
  try {
    if (decided === 'not yet') decided = await options.beforeSend?.(body ? asked : { kind: 'headers' })
    if (body && decided && range && decided.end < range.end) {
      body.destroy()
      range = { start: range.start, end: decided.end }
      body = await open(range)
    }
  } catch (error) {
    body?.destroy()
    throw error
  }
  reply.headers(contentHeaders)
  if (range) {
    reply
      .status(206)
      .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
      .header('content-length', range.end - range.start + 1)
  } else {
    reply.header('content-length', file.size)
  }
  return reply.send(body)
}
