// A zip archive written as it is sent: no temporary file, memory that does not grow with the bytes.
//
// Why a writer of our own. A zip entry's header carries the CRC-32 of its bytes. The maintained streaming
// writers compute it in JavaScript as the bytes pass (yazl 3.3.1, archiver 8, client-zip 2.5: 0.2 to 0.34
// GB/s on the development machine), and none of them takes a CRC known in advance, except @zip.js/zip.js
// (2.24, `passThrough` with `crc32`), which works on web streams: with known CRCs it sent 1,000 files of 1 MiB
// at 0.05 to 0.12 GB/s here, where Node's own file stream sent the same bytes at 0.5 to 0.7 GB/s and a download
// through Coffer runs at about 5 GB/s (docs/benchmarks.md). Each of them also copies every chunk through
// streams of its own, which forgoes the fast path of blob/local-read-stream.ts (a blob piped straight into the
// response through two reused buffers). Coffer stores each file's CRC-32 when its upload is processed
// (uploads/processing.job.ts, zlib's CRC-32 at several GB/s), so the archive needs no checksum at download time:
// each entry's header states the CRC and size, and its bytes are piped from the blob store into the response
// untouched. What remains is the format's records, written here by hand after PKWARE's APPNOTE.TXT (6.3.10):
//
// - every entry STORED (method 0): files are mostly compressed already, and storing keeps the rate at the
//   disk's; the UTF-8 flag (bit 11) set, so names in any script unpack as they are;
// - ZIP64 records where a size, an offset or the number of entries outgrows the classic fields (4 GiB, 65,535);
// - an entry whose CRC is unknown (a file stored before CRCs were) gets a data descriptor (bit 3): its header
//   says "CRC and sizes follow the bytes", and its CRC is computed with zlib.crc32 as its bytes pass;
// - the date twice: DOS time in UTC (the format has no zone), and the extended timestamp (0x5455, UTC seconds)
//   that Info-ZIP and 7-Zip restore exactly.
//
// The central directory is kept in memory until the end, as the format needs it there: about 90 bytes plus the
// name per entry (10 MB for 100,000 files), never the files' rows nor their bytes. The archive's exact length
// can be computed before it is written (`zipLength`), so a response can carry Content-Length.

import { Readable, type Writable } from 'node:stream'
import { crc32 } from 'node:zlib'
import { PipeBuffers, readAhead } from '../../../platform/blob/local-read-stream.ts'

/** One file of the archive, its bytes opened only when the writer gets to it (or a little before). */
export interface ZipEntry {
  /** The name inside the archive, already made safe (zip-names.ts): no separators, unique. */
  name: string
  /** Bytes; `open` must yield exactly these. */
  size: number
  /** CRC-32 of the bytes, or null to compute it as they pass (the entry then ends with a data descriptor). */
  crc32: number | null
  /** Epoch milliseconds. */
  modifiedAt: number
  /** The bytes. May throw: before the first byte is sent the caller still answers an error; after, the response is cut. */
  open(): Promise<Readable>
}

const LOCAL_HEADER = 0x04034b50
const CENTRAL_HEADER = 0x02014b50
const DATA_DESCRIPTOR = 0x08074b50
const ZIP64_END = 0x06064b50
const ZIP64_LOCATOR = 0x07064b50
const END = 0x06054b50

const FLAG_DATA_DESCRIPTOR = 0x0008
const FLAG_UTF8 = 0x0800
/** 2.0: stored files; 4.5: ZIP64 (APPNOTE 4.4.3.2). */
const VERSION_PLAIN = 20
const VERSION_ZIP64 = 45
/** Made by: Unix (3), so that the external attributes below are a Unix mode; spec version 4.5. */
const VERSION_MADE_BY = (3 << 8) | VERSION_ZIP64
/** A regular file, rw-r--r--. */
const EXTERNAL_ATTRIBUTES = (0o100644 << 16) >>> 0

/** A classic 32-bit field holding this value says "see the ZIP64 extra field". */
const MAX_32 = 0xffffffff
const MAX_16 = 0xffff
const ZIP64_EXTRA = 0x0001
const EXTENDED_TIMESTAMP = 0x5455
const TIMESTAMP_EXTRA_LENGTH = 9

/**
 * Entries opened ahead of the one being sent, so that opening a blob overlaps sending the previous one. Opening a
 * local blob and closing it again takes five filesystem calls (the store's checks of the directories, open, stat,
 * close), each a trip through libuv's thread pool: about 0.25 ms of CPU per blob one at a time on the development
 * machine, 0.2 ms with four under way (where threads wake less), 0.03 ms as synchronous calls. With 1,000 blobs of
 * 1 MiB, that is most of what a zip costs beyond one download of the same bytes.
 */
const OPEN_AHEAD = 4
/**
 * Bytes the response may hold unsent before the writer waits for it to drain. More than the blobs' two shared
 * buffers (2 MiB), so that a header written between two blobs does not wait for the last one's bytes to leave:
 * the next blob is read meanwhile, as the chunks of one download are.
 */
const BACKLOG = 4 * 1024 * 1024

interface EntryLayout {
  name: Buffer
  size: number
  /** Null: computed as the bytes pass, given in a data descriptor. */
  crc32: number | null
  modifiedAt: number
  /** Where its local header starts. */
  offset: number
}

/** DOS date and time fields (2-second steps, years 1980 to 2107), in UTC. */
function dosDateTime(ms: number): { date: number; time: number } {
  const d = new Date(Number.isFinite(ms) ? ms : 0)
  const year = d.getUTCFullYear()
  if (year < 1980) return { date: (1 << 5) | 1, time: 0 }
  if (year > 2107) return { date: (127 << 9) | (12 << 5) | 31, time: (23 << 11) | (59 << 5) | 29 }
  return {
    date: ((year - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate(),
    time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | (d.getUTCSeconds() >> 1),
  }
}

/** Unix seconds for the extended timestamp, which readers take as signed 32-bit. */
const unixSeconds = (ms: number) => Math.min(Math.max(Math.floor(ms / 1000), 0), 0x7fffffff)

function timestampExtra(buffer: Buffer, at: number, modifiedAt: number): number {
  buffer.writeUInt16LE(EXTENDED_TIMESTAMP, at)
  buffer.writeUInt16LE(5, at + 2)
  buffer.writeUInt8(1, at + 4) // the modification time only
  buffer.writeUInt32LE(unixSeconds(modifiedAt), at + 5)
  return at + TIMESTAMP_EXTRA_LENGTH
}

/** The local header: sizes and CRC when known; zeros (and a data descriptor later) when the CRC is not. */
function localHeader(entry: EntryLayout): Buffer {
  const known = entry.crc32 !== null
  // With a descriptor the sizes follow the bytes; an entry that reaches 4 GiB then says so here, as zip64 extra
  // field with zeros, so that readers take the descriptor's sizes as 8 bytes each (APPNOTE 4.3.9.2).
  const zip64 = entry.size >= MAX_32
  const extraLength = TIMESTAMP_EXTRA_LENGTH + (zip64 ? 20 : 0)
  const buffer = Buffer.alloc(30 + entry.name.length + extraLength)
  const { date, time } = dosDateTime(entry.modifiedAt)
  buffer.writeUInt32LE(LOCAL_HEADER, 0)
  buffer.writeUInt16LE(zip64 ? VERSION_ZIP64 : VERSION_PLAIN, 4)
  buffer.writeUInt16LE(FLAG_UTF8 | (known ? 0 : FLAG_DATA_DESCRIPTOR), 6)
  buffer.writeUInt16LE(0, 8) // stored
  buffer.writeUInt16LE(time, 10)
  buffer.writeUInt16LE(date, 12)
  buffer.writeUInt32LE(known ? (entry.crc32 as number) : 0, 14)
  const size32 = zip64 ? MAX_32 : known ? entry.size : 0
  buffer.writeUInt32LE(size32, 18)
  buffer.writeUInt32LE(size32, 22)
  buffer.writeUInt16LE(entry.name.length, 26)
  buffer.writeUInt16LE(extraLength, 28)
  entry.name.copy(buffer, 30)
  let at = timestampExtra(buffer, 30 + entry.name.length, entry.modifiedAt)
  if (zip64) {
    // Both sizes, as the local header's zip64 field must hold (APPNOTE 4.5.3); zeros before a descriptor.
    buffer.writeUInt16LE(ZIP64_EXTRA, at)
    buffer.writeUInt16LE(16, at + 2)
    buffer.writeBigUInt64LE(known ? BigInt(entry.size) : 0n, at + 4)
    buffer.writeBigUInt64LE(known ? BigInt(entry.size) : 0n, at + 12)
    at += 20
  }
  return buffer
}

/** The data descriptor after the bytes of an entry whose CRC was unknown; 8-byte sizes once they need them. */
function dataDescriptor(entry: EntryLayout, crc: number): Buffer {
  const zip64 = entry.size >= MAX_32
  const buffer = Buffer.alloc(zip64 ? 24 : 16)
  buffer.writeUInt32LE(DATA_DESCRIPTOR, 0)
  buffer.writeUInt32LE(crc, 4)
  if (zip64) {
    buffer.writeBigUInt64LE(BigInt(entry.size), 8)
    buffer.writeBigUInt64LE(BigInt(entry.size), 16)
  } else {
    buffer.writeUInt32LE(entry.size, 8)
    buffer.writeUInt32LE(entry.size, 12)
  }
  return buffer
}

function centralHeader(entry: EntryLayout, crc: number): Buffer {
  const bigSize = entry.size >= MAX_32
  const bigOffset = entry.offset >= MAX_32
  const zip64Length = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0)
  const extraLength = TIMESTAMP_EXTRA_LENGTH + (zip64Length > 0 ? 4 + zip64Length : 0)
  const buffer = Buffer.alloc(46 + entry.name.length + extraLength)
  const { date, time } = dosDateTime(entry.modifiedAt)
  buffer.writeUInt32LE(CENTRAL_HEADER, 0)
  buffer.writeUInt16LE(VERSION_MADE_BY, 4)
  buffer.writeUInt16LE(zip64Length > 0 || entry.size >= MAX_32 ? VERSION_ZIP64 : VERSION_PLAIN, 6)
  buffer.writeUInt16LE(FLAG_UTF8 | (entry.crc32 === null ? FLAG_DATA_DESCRIPTOR : 0), 8)
  buffer.writeUInt16LE(0, 10)
  buffer.writeUInt16LE(time, 12)
  buffer.writeUInt16LE(date, 14)
  buffer.writeUInt32LE(crc, 16)
  buffer.writeUInt32LE(bigSize ? MAX_32 : entry.size, 20)
  buffer.writeUInt32LE(bigSize ? MAX_32 : entry.size, 24)
  buffer.writeUInt16LE(entry.name.length, 28)
  buffer.writeUInt16LE(extraLength, 30)
  buffer.writeUInt16LE(0, 32) // no comment
  buffer.writeUInt16LE(0, 34) // disk 0
  buffer.writeUInt16LE(0, 36) // internal attributes: binary
  buffer.writeUInt32LE(EXTERNAL_ATTRIBUTES, 38)
  buffer.writeUInt32LE(bigOffset ? MAX_32 : entry.offset, 42)
  entry.name.copy(buffer, 46)
  let at = timestampExtra(buffer, 46 + entry.name.length, entry.modifiedAt)
  if (zip64Length > 0) {
    // Only the fields whose classic slot says MAX_32, in this fixed order (APPNOTE 4.5.3).
    buffer.writeUInt16LE(ZIP64_EXTRA, at)
    buffer.writeUInt16LE(zip64Length, at + 2)
    at += 4
    if (bigSize) {
      buffer.writeBigUInt64LE(BigInt(entry.size), at)
      buffer.writeBigUInt64LE(BigInt(entry.size), at + 8)
      at += 16
    }
    if (bigOffset) buffer.writeBigUInt64LE(BigInt(entry.offset), at)
  }
  return buffer
}

/** The end of central directory record, preceded by the ZIP64 end record and locator when a field outgrows it. */
function endRecords(entries: number, directoryOffset: number, directorySize: number): Buffer {
  const zip64 = entries >= MAX_16 || directoryOffset >= MAX_32 || directorySize >= MAX_32
  const buffer = Buffer.alloc((zip64 ? 56 + 20 : 0) + 22)
  let at = 0
  if (zip64) {
    const zip64EndOffset = directoryOffset + directorySize
    buffer.writeUInt32LE(ZIP64_END, 0)
    buffer.writeBigUInt64LE(44n, 4) // the size of the rest of this record
    buffer.writeUInt16LE(VERSION_MADE_BY, 12)
    buffer.writeUInt16LE(VERSION_ZIP64, 14)
    buffer.writeUInt32LE(0, 16) // this disk
    buffer.writeUInt32LE(0, 20) // the directory's disk
    buffer.writeBigUInt64LE(BigInt(entries), 24)
    buffer.writeBigUInt64LE(BigInt(entries), 32)
    buffer.writeBigUInt64LE(BigInt(directorySize), 40)
    buffer.writeBigUInt64LE(BigInt(directoryOffset), 48)
    buffer.writeUInt32LE(ZIP64_LOCATOR, 56)
    buffer.writeUInt32LE(0, 60)
    buffer.writeBigUInt64LE(BigInt(zip64EndOffset), 64)
    buffer.writeUInt32LE(1, 72) // disks in all
    at = 76
  }
  buffer.writeUInt32LE(END, at)
  buffer.writeUInt16LE(0, at + 4)
  buffer.writeUInt16LE(0, at + 6)
  buffer.writeUInt16LE(Math.min(entries, MAX_16), at + 8)
  buffer.writeUInt16LE(Math.min(entries, MAX_16), at + 10)
  buffer.writeUInt32LE(Math.min(directorySize, MAX_32), at + 12)
  buffer.writeUInt32LE(Math.min(directoryOffset, MAX_32), at + 16)
  buffer.writeUInt16LE(0, at + 20) // no comment
  return buffer
}

/** The length in bytes of the archive of these entries, as `ZipStream` writes it: for Content-Length. */
export function zipLength(entries: Iterable<Pick<ZipEntry, 'name' | 'size' | 'crc32'>>): number {
  let offset = 0
  let directory = 0
  let count = 0
  for (const { name, size, crc32: crc } of entries) {
    const entry: EntryLayout = { name: Buffer.from(name), size, crc32: crc, modifiedAt: 0, offset }
    offset += localHeader(entry).length + size + (crc === null ? dataDescriptor(entry, 0).length : 0)
    directory += centralHeader(entry, 0).length
    count++
  }
  return offset + directory + endRecords(count, offset, directory).length
}

/** Fixed-size pieces the central directory is gathered in, rather than one small buffer per entry. */
const DIRECTORY_PIECE = 64 * 1024

class ByteList {
  readonly pieces: Buffer[] = []
  #current = Buffer.allocUnsafe(DIRECTORY_PIECE)
  #used = 0
  length = 0

  append(bytes: Buffer): void {
    let from = 0
    while (from < bytes.length) {
      const n = bytes.copy(this.#current, this.#used, from)
      from += n
      this.#used += n
      if (this.#used === this.#current.length) {
        this.pieces.push(this.#current)
        this.#current = Buffer.allocUnsafe(DIRECTORY_PIECE)
        this.#used = 0
      }
    }
    this.length += bytes.length
  }

  /** Every piece, the last one cut to what it holds. */
  all(): Buffer[] {
    return this.#used === 0 ? this.pieces : [...this.pieces, this.#current.subarray(0, this.#used)]
  }
}

/** Where the writer puts bytes: a writable destination (the HTTP response), or the stream's own buffer. */
interface Sink {
  /** Resolves once more may be written. */
  write(chunk: Buffer): Promise<void>
  /**
   * Sends the blob's bytes; resolves once they are all handed on. `following` names the blob piped after it,
   * if already open, whose first read may start while this one's last bytes are written.
   */
  pipeFrom(source: Readable, following: () => Readable | undefined): Promise<void>
}

type Opened = { entry: ZipEntry; source: Readable } | { error: unknown } | undefined

/** An entry whose blob is opening; `opened` is set once it has. */
interface Opening {
  result: Promise<Opened>
  opened?: Opened
}

class Stopped extends Error {}

/**
 * The archive of `entries`, in their order. Piped into the HTTP response (as Fastify's `reply.send` does), it
 * writes there directly, and each blob's stream is piped there too, so the local store's two-buffer path
 * stays in use; read any other way, it is an ordinary readable stream. Any failure (a blob gone missing, a
 * short read) destroys the stream with the error, which cuts the response: a client must never take a
 * truncated archive for a complete one. `ready` opens the first entry before anything is sent, so that its
 * failure can still be answered as an error.
 */
export class ZipStream extends Readable {
  readonly #entries: AsyncIterator<ZipEntry>
  /** Entries taken from `entries`, their blobs opening; settled ones are held as results, never rejected promises. */
  readonly #ahead: Opening[] = []
  /** Every blob opened and not yet finished: destroyed with the archive. */
  readonly #open = new Set<Readable>()
  #exhausted = false
  #started = false
  /** Wakes whatever the writer waits for when the stream is destroyed. */
  #abort: (() => void) | undefined
  readonly #aborted: Promise<void>
  /** The generic path: resolves when the reader wants more. */
  #wanted: (() => void) | undefined

  constructor(entries: AsyncIterable<ZipEntry>) {
    super({ highWaterMark: 1024 * 1024 })
    this.#entries = entries[Symbol.asyncIterator]()
    this.#aborted = new Promise((resolve) => {
      this.#abort = resolve
    })
  }

  /** Opens the first entries; rejects with the first one's failure, before anything is sent. */
  async ready(): Promise<void> {
    this.#fill()
    const first = await this.#ahead[0]?.result
    if (first && 'error' in first) throw first.error
  }

  #fill(): void {
    while (!this.#exhausted && !this.destroyed && this.#ahead.length < OPEN_AHEAD + 1) {
      const opening: Opening = { result: this.#openNext() }
      void opening.result.then((opened) => {
        opening.opened = opened
      })
      this.#ahead.push(opening)
    }
  }

  /** The next entry with its blob open; `undefined` after the last. Never rejects: a failure is a result. */
  async #openNext(): Promise<Opened> {
    try {
      const next = await this.#entries.next()
      if (next.done) {
        this.#exhausted = true
        return undefined
      }
      const source = await next.value.open()
      if (this.destroyed) {
        source.destroy()
        return undefined
      }
      this.#open.add(source)
      return { entry: next.value, source }
    } catch (error) {
      this.#exhausted = true
      return { error }
    }
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (this.#started || this.readableFlowing !== null) return super.pipe(destination, options)
    this.#started = true
    const target = destination as unknown as Writable
    destination.emit('pipe', this)
    // The blobs' buffers, shared from one to the next (blob/local-read-stream.ts).
    const buffers = new PipeBuffers()
    const sink: Sink = {
      write: (chunk) => this.#writeTo(target, chunk),
      pipeFrom: (source, following) => this.#pipeTo(source, target, buffers, following),
    }
    this.#run(sink)
      .then(async () => {
        const failed = await Promise.race([buffers.settled(), this.#aborted])
        if (failed) throw failed
      })
      .then(() => {
        if (this.destroyed) return
        // Ended as `pipe` ends its destination: the stream's 'end' first, then the destination's.
        if (options?.end !== false) this.once('end', () => target.end())
        this.push(null)
        this.resume()
      }, this.#fail)
    return destination
  }

  override _read(): void {
    const wanted = this.#wanted
    this.#wanted = undefined
    wanted?.()
    if (this.#started) return
    this.#started = true
    const sink: Sink = {
      write: (chunk) => this.#push(chunk),
      pipeFrom: async (source) => {
        for await (const chunk of source) await this.#push(chunk as Buffer)
      },
    }
    this.#run(sink).then(() => this.push(null), this.#fail)
  }

  readonly #fail = (error: unknown) => {
    if (error instanceof Stopped || this.destroyed) return
    this.destroy(error as Error)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#abort?.()
    for (const source of this.#open) source.destroy()
    this.#open.clear()
    // Blobs still opening are closed when they arrive (#openNext sees `destroyed`); the entries' source too.
    void this.#entries.return?.().catch(() => {})
    callback(error)
  }

  async #push(chunk: Buffer): Promise<void> {
    if (this.destroyed) throw new Stopped()
    if (this.push(chunk)) return
    await Promise.race([new Promise<void>((resolve) => (this.#wanted = resolve)), this.#aborted])
    if (this.destroyed) throw new Stopped()
  }

  async #writeTo(target: Writable, chunk: Buffer): Promise<void> {
    if (this.destroyed || target.destroyed) throw new Stopped()
    if (target.write(chunk) || target.writableLength <= BACKLOG) return
    await Promise.race([waitForDrain(target), this.#aborted])
    if (this.destroyed) throw new Stopped()
  }

  /**
   * The blob's bytes into the destination, by the blob stream's own `pipe` (for a local blob into a socket or
   * response, its two-buffer path, the buffers shared with the blobs before and after it), not ending the
   * destination.
   */
  async #pipeTo(
    source: Readable,
    target: Writable,
    buffers: PipeBuffers,
    following: () => Readable | undefined,
  ): Promise<void> {
    const done = ended(source)
    buffers.afterLastRead = () => {
      const next = following()
      if (next) readAhead(next, buffers)
    }
    const options = { end: false, buffers }
    source.pipe(target, options)
    try {
      await Promise.race([done, this.#aborted])
    } finally {
      buffers.afterLastRead = undefined
    }
    if (this.destroyed) throw new Stopped()
  }

  /** The next entry's blob, if it is open and will be piped (its CRC-32 known), for a read ahead. */
  #followingPiped(): Readable | undefined {
    const opened = this.#ahead[0]?.opened
    return opened && 'source' in opened && opened.entry.crc32 !== null ? opened.source : undefined
  }

  async #run(sink: Sink): Promise<void> {
    const directory = new ByteList()
    let offset = 0
    let count = 0
    for (;;) {
      this.#fill()
      const next = await this.#ahead.shift()?.result
      if (next === undefined) break
      if ('error' in next) throw next.error
      this.#fill()
      const { entry, source } = next
      const layout: EntryLayout = {
        name: Buffer.from(entry.name),
        size: entry.size,
        crc32: entry.crc32,
        modifiedAt: entry.modifiedAt,
        offset,
      }
      const header = localHeader(layout)
      await sink.write(header)
      let crc = entry.crc32
      if (crc !== null) {
        await sink.pipeFrom(source, () => this.#followingPiped())
      } else {
        crc = 0
        let passed = 0
        for await (const chunk of source) {
          crc = crc32(chunk as Buffer, crc)
          passed += (chunk as Buffer).length
          await sink.write(chunk as Buffer)
        }
        if (passed !== entry.size) {
          throw new Error(
            `the bytes of ${entry.name} were ${passed}, not the ${entry.size} its size promised`,
          )
        }
      }
      this.#open.delete(source)
      let written = header.length + entry.size
      if (entry.crc32 === null) {
        const descriptor = dataDescriptor(layout, crc)
        await sink.write(descriptor)
        written += descriptor.length
      }
      directory.append(centralHeader(layout, crc))
      offset += written
      count++
    }
    for (const piece of directory.all()) await sink.write(piece)
    await sink.write(endRecords(count, offset, directory.length))
  }
}

/**
 * Resolves once the blob's last byte has been read ('end'), without waiting for its file to close as
 * `finished` would ('close' comes after a trip through the thread pool, which every blob of a zip would wait
 * for before the next one starts); rejects if it fails or closes before its end.
 */
function ended(source: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      source.off('end', onEnd)
      source.off('error', settle)
      source.off('close', onClose)
      if (error) reject(error)
      else resolve()
    }
    const onEnd = () => settle()
    const onClose = () => settle(new Error('the blob stream closed before its end'))
    if (source.readableEnded) return resolve()
    source.on('end', onEnd)
    source.on('error', settle)
    source.on('close', onClose)
  })
}

function waitForDrain(target: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      target.off('drain', done)
      target.off('close', done)
      resolve()
    }
    target.on('drain', done)
    target.on('close', done)
  })
}
