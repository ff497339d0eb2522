// The stream of a local blob's bytes that `LocalBlobStore.get` returns, made for downloads.
//
// A file stream reads each chunk into a new buffer. At the speed of a download from the page cache (gigabytes
// a second) that is a gigabyte of new memory outside V8's heap each second, and V8 answers the growth with a
// full garbage collection every few dozen megabytes: in a running Coffer, whose heap is not small, the
// collector took 36 % of the main thread during a 1 GiB download, and the download ran at 0.4 of nginx's
// speed. Piped into a socket or an HTTP response, this stream therefore reads into two buffers of its own,
// one being written while the other is read, and reads into a buffer again only once the destination's write
// callback has reported its bytes handed to the kernel: nothing is allocated per chunk, and the same two
// buffers stay in the CPU's cache (bench/downloads.ts, README "Downloads").
//
// Several blobs piped one after another into one response (the entries of a zip, files/zip/zip-stream.ts) share
// their two buffers through `PipeBuffers`: each pipe goes on where the previous one stopped, and the next blob's
// first read starts as soon as the last one's final read is back (`afterLastRead`, `readAhead`), so it runs in
// the thread pool while those bytes are written; no buffer is made per blob. With a pair of new
// buffers per blob, a zip of 1,000 files of 1 MiB cost its process 4.9 s of CPU per GiB, against 0.6 s for one
// file of the same size (the collector again), and each blob waited for the previous one's last write.
//
// Anything else (a pipe into another kind of stream, `for await`, 'data' listeners) reads it as an ordinary
// stream with a new buffer per chunk: a consumer other than a socket gives no sign of when it is done with a
// chunk, and one that keeps chunks (a PassThrough, a collector) must get buffers of its own.
import type { FileHandle } from 'node:fs/promises'
import { ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { Readable } from 'node:stream'

/**
 * Bytes read at a time. 1 MiB: with two of them in turn, as fast as any size tried up to 4 MiB, and the
 * memory of a download stays at 2 MiB.
 */
const READ_SIZE = 1024 * 1024
const PIPE_BUFFERS = 2

/**
 * The two buffers of pipes made one after another into the same destination, with their writes under way. Give
 * the same one to each pipe (`pipe(destination, { end: false, buffers })`), and wait for `settled` before ending
 * the destination yourself. A pipe into anything but a socket or an HTTP response ignores it.
 */
export class PipeBuffers {
  readonly buffers: Buffer[] = []
  /** Settles, never rejects, once its buffer's write has left: with the write's error, if it failed. */
  readonly written: Promise<Error | null | undefined>[] = []
  /** The buffer the next read goes into. */
  turn = 0
  /**
   * Called by a pipe when its last read has come back, before it writes those bytes: the owner names the blob
   * piped next, whose first read then starts (`readAhead`) and runs in the thread pool while this write runs
   * on the main thread. Otherwise each blob's first read would wait for the last one's write, and the write
   * for the read: a zip of 1,000 blobs of 1 MiB spent half its time so.
   */
  afterLastRead: (() => void) | undefined
  /** The first read of the blob piped next, started ahead, with its byte count to come. */
  ahead: { stream: LocalReadStream; bytesRead: Promise<number> } | undefined

  /** Resolves once every write made through these buffers has left: with the first failure, if any. */
  async settled(): Promise<Error | undefined> {
    return (await Promise.all(this.written)).find((error) => error instanceof Error)
  }
}

function shortFile(expected: number, got: number): Error {
  return new Error(`the blob file ended after ${got} bytes, before the ${expected} its size promised`)
}

/**
 * Starts the first read of `next` into the buffer its pipe will use first, if it is a local blob that has not
 * been read yet; its pipe with the same `buffers` takes the bytes from there.
 */
export function readAhead(next: Readable, buffers: PipeBuffers): void {
  if (next instanceof LocalReadStream) next.readAhead(buffers)
}

/** Bytes `start` to `end` (exclusive) of an open file, which the stream closes when it ends or is destroyed. */
export class LocalReadStream extends Readable {
  readonly #handle: FileHandle
  readonly #end: number
  #position: number
  /** Set once piped into a socket: the piping, which `_destroy` waits for (and stops) before closing. */
  #pumping: Promise<void> | undefined
  #stop: (() => void) | undefined
  /** A first read started by `readAhead`, which `_destroy` lets finish before closing the file. */
  #readingAhead: Promise<unknown> | undefined

  constructor(handle: FileHandle, start: number, end: number) {
    super({ highWaterMark: READ_SIZE })
    this.#handle = handle
    this.#position = start
    this.#end = end
  }

  override _read(): void {
    // Piped into a socket, the bytes go there alone (a 'data' listener added later gets none of them).
    if (this.#pumping) return
    const length = Math.min(READ_SIZE, this.#end - this.#position)
    if (length <= 0) {
      this.push(null)
      return
    }
    const buffer = Buffer.allocUnsafeSlow(length)
    this.#handle.read(buffer, 0, length, this.#position).then(
      ({ bytesRead }) => {
        if (this.destroyed) return
        if (bytesRead === 0) {
          this.destroy(shortFile(this.#end, this.#position))
          return
        }
        this.#position += bytesRead
        this.push(bytesRead === length ? buffer : buffer.subarray(0, bytesRead))
      },
      (error: Error) => this.destroy(error),
    )
  }

  /** See `readAhead` above: the first read into the buffer of the turn after the ring's current one. */
  readAhead(shared: PipeBuffers): void {
    if (this.#pumping || this.#readingAhead || this.readableFlowing !== null || this.destroyed) return
    if (this.#position >= this.#end) return
    const turn = (shared.turn + 1) % PIPE_BUFFERS
    const length = Math.min(READ_SIZE, this.#end - this.#position)
    const position = this.#position
    const bytesRead = (async () => {
      // Its buffer's last write must have left first; a failed one is seen by the pipe, through `written`.
      await shared.written[turn]
      const buffer = shared.buffers[turn] ?? Buffer.allocUnsafeSlow(READ_SIZE)
      shared.buffers[turn] = buffer
      return (await this.#handle.read(buffer, 0, length, position)).bytesRead
    })()
    this.#readingAhead = bytesRead.catch(() => {})
    shared.ahead = { stream: this, bytesRead }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop?.()
    // A read under way ends first (FileHandle.close also waits for it).
    Promise.all([this.#pumping, this.#readingAhead])
      .then(() => this.#handle.close())
      .then(
        () => callback(error),
        (closeError: Error) => callback(error ?? closeError),
      )
  }

  override pipe<T extends NodeJS.WritableStream>(
    destination: T,
    options?: { end?: boolean; buffers?: PipeBuffers },
  ): T {
    const socketLike = destination instanceof ServerResponse || destination instanceof Socket
    // Only a stream nobody has read from yet. A pipe that leaves its destination open (`end: false`) is one
    // blob of several sent in one response: a zip (files/zip/zip-stream.ts) writes its entries so.
    if (!socketLike || this.#pumping || this.readableFlowing !== null) {
      return super.pipe(destination, options)
    }
    destination.emit('pipe', this)
    this.#pumping = this.#pump(destination, options?.end !== false, options?.buffers)
    return destination
  }

  /**
   * Reads into two buffers in turn, each again only once its last write has left; then ends `destination` if
   * `end`. With `shared`, the buffers are those of the pipes before and after this one, and the last writes are
   * left under way for the next pipe (or the owner of `shared`) to wait for.
   */
  async #pump(destination: ServerResponse | Socket, end: boolean, shared?: PipeBuffers): Promise<void> {
    const stopped = new Promise<'stopped'>((resolve) => {
      this.#stop = () => resolve('stopped')
    })
    // A destination closed early (the client went away) may never call back the writes it was given.
    const stop = () => this.#stop?.()
    destination.once('close', stop)
    try {
      // A blob of its own is read in buffers no larger than itself; shared ones serve blobs of any size.
      const size = shared ? READ_SIZE : Math.min(READ_SIZE, this.#end - this.#position)
      const ring = shared ?? new PipeBuffers()
      const { buffers, written } = ring
      for (; this.#position < this.#end; ring.turn = (ring.turn + 1) % PIPE_BUFFERS) {
        const turn = ring.turn
        const result = await Promise.race([written[turn], stopped])
        if (result === 'stopped' || this.destroyed) return
        if (result) throw result
        const length = Math.min(size, this.#end - this.#position)
        // A read started ahead for a blob that was not piped after all may still be filling a buffer.
        if (ring.ahead && ring.ahead.stream !== this) {
          await ring.ahead.bytesRead.catch(() => {})
          ring.ahead = undefined
        }
        let bytesRead: number
        if (ring.ahead?.stream === this) {
          // The first read, started by `readAhead` into this turn's buffer while the last blob was written.
          const ahead = ring.ahead.bytesRead
          ring.ahead = undefined
          bytesRead = await ahead
        } else {
          // Made when its turn first comes: a blob of one read needs one.
          const buffer = buffers[turn] ?? Buffer.allocUnsafeSlow(size)
          buffers[turn] = buffer
          bytesRead = (await this.#handle.read(buffer, 0, length, this.#position)).bytesRead
        }
        const buffer = buffers[turn] as Buffer
        if (this.destroyed) return
        if (bytesRead === 0) throw shortFile(this.#end, this.#position)
        this.#position += bytesRead
        if (this.#position >= this.#end) ring.afterLastRead?.()
        const chunk = bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead)
        // Settles, never rejects: a failed write is seen when its buffer's turn comes back.
        written[turn] = new Promise((resolve) => destination.write(chunk, resolve))
      }
      if (!shared) {
        const results = await Promise.race([Promise.all(written), stopped])
        if (results === 'stopped' || this.destroyed) return
        const failed = results.find(Boolean)
        if (failed) throw failed
      }
      // Ended as `pipe` ends its destination: the stream's 'end' first, then the destination's.
      if (end) this.once('end', () => destination.end())
      this.push(null)
      this.resume()
    } catch (error) {
      this.destroy(error as Error)
    } finally {
      destination.off('close', stop)
    }
  }
}
