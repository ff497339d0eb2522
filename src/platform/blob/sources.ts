// What every driver does with a BlobSource, whatever it writes to: keep a stream's early errors for its
// iteration to report, hold a source to the length announced for it, read a short one into memory.
import { Readable } from 'node:stream'
import { type BlobSource, PartLengthError } from './blob-store.ts'

/**
 * Runs `write` with the source's errors kept for its iteration to report. Nothing listens to a stream source
 * until its iteration starts, after a file is opened; an error it emitted before that would be an uncaught
 * exception. The iteration still fails with that error, which the stream records.
 */
export async function withHeldErrors<T>(source: unknown, write: () => Promise<T>): Promise<T> {
  if (!(source instanceof Readable)) return write()
  const hold = () => {}
  source.on('error', hold)
  try {
    return await write()
  } finally {
    source.off('error', hold)
  }
}

/** A source's chunks as they pass, counted and held to a length (see `measured`). */
export interface Measured {
  chunks: AsyncIterable<Uint8Array>
  /** Bytes passed so far. */
  size(): number
  /** The source's own failure, or its wrong length, once iteration has failed. */
  failure(): Error | undefined
}

/** A blob written with `put` did not have the length announced for it. */
export class BlobLengthError extends Error {
  constructor(declared: number, got: string) {
    super(`the blob was announced as ${declared} bytes but ${got}`)
    this.name = 'BlobLengthError'
  }
}

/**
 * The source's chunks, counted, and held to `length` when one is announced: a source that yields more fails as
 * soon as it does, one that yields less fails at its end, so that a request carrying it is aborted, never
 * completed short. With `partNumber` the failure is a PartLengthError, else a BlobLengthError. A Readable
 * destroyed without an error fails too (`for await` says so).
 */
export function measured(source: BlobSource, length?: number, partNumber?: number): Measured {
  let size = 0
  let failure: Error | undefined
  const wrongLength = (got: string) =>
    partNumber === undefined
      ? new BlobLengthError(length ?? 0, got)
      : new PartLengthError(partNumber, length ?? 0, got)
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of iterate(source)) {
        size += chunk.length
        if (length !== undefined && size > length) throw wrongLength('its source yields more')
        yield chunk
      }
      if (length !== undefined && size < length) throw wrongLength(`its source ended after ${size}`)
    } catch (error) {
      failure = error as Error
      throw error
    }
  }
  return { chunks: chunks(), size: () => size, failure: () => failure }
}

/** A source as chunks; a buffer is one chunk. */
export function iterate(source: BlobSource): AsyncIterable<Uint8Array> | Uint8Array[] {
  return source instanceof Uint8Array ? [source] : source
}

/** A source of at most `max` bytes read into one buffer; `tooLarge` says why a longer one fails. */
export async function collect(source: BlobSource, max: number, tooLarge: () => Error): Promise<Buffer> {
  if (source instanceof Uint8Array) {
    if (source.length > max) throw tooLarge()
    return Buffer.from(source.buffer, source.byteOffset, source.length)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of source) {
    size += chunk.length
    if (size > max) throw tooLarge()
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size)
}

/** A stream of the chunks, for clients that want a Readable body. */
export const readableOf = (chunks: AsyncIterable<Uint8Array>) => Readable.from(chunks, { objectMode: false })
