// File-system steps the local BlobStore driver's modules share.
import type { FileHandle } from 'node:fs/promises'
import { open } from 'node:fs/promises'

export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

/** The path, or a part of it, does not exist. */
export function isMissing(error: unknown): boolean {
  const code = errorCode(error)
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/** Makes entries created or renamed in `dir` durable: a file's fsync does not cover its directory entry. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Bytes received while a write is under way, at most, before the source is paused. */
const MAX_QUEUED_BYTES = 1024 * 1024

/**
 * Writes every chunk of `source` from byte `start` of the file on and returns the byte count; `tooMany` is
 * thrown, before anything past it is written, once the count would exceed `limit`.
 *
 * The source is read while a write is under way, and what arrived meanwhile goes in the next write, together:
 * a network source yields many small chunks, and one system call (and one trip to the thread pool) each would
 * cost more than the copying. Iterating (rather than piping) stops at the source's first error, including a
 * stream destroyed without one. Whatever happens, no write is under way once this returns or throws.
 */
export async function writeChunks(
  handle: FileHandle,
  source: AsyncIterable<unknown> | Iterable<unknown>,
  start: number,
  limit = Number.POSITIVE_INFINITY,
  tooMany: () => Error = () => new RangeError(`more than ${limit} bytes`),
): Promise<number> {
  let size = 0
  let written = 0
  let queue: Uint8Array[] = []
  let queued = 0
  let writing: Promise<void> | undefined
  let failure: { error: unknown } | undefined
  const writeQueued = async () => {
    try {
      while (queue.length > 0 && !failure) {
        const batch = queue
        const bytes = queued
        queue = []
        queued = 0
        await writevFully(handle, batch, start + written)
        written += bytes
      }
    } catch (error) {
      failure = { error }
    } finally {
      writing = undefined
    }
  }
  try {
    for await (const chunk of source) {
      if (failure) throw failure.error
      if (!(chunk instanceof Uint8Array)) throw new TypeError('a blob source must yield Uint8Array chunks')
      if (size + chunk.length > limit) throw tooMany()
      if (chunk.length === 0) continue
      queue.push(chunk)
      queued += chunk.length
      size += chunk.length
      writing ??= writeQueued()
      if (queued >= MAX_QUEUED_BYTES) await writing
    }
    await writing
    if (failure) throw failure.error
    return size
  } finally {
    // The caller closes, removes or renames the file next: no write may land after that.
    await writing
  }
}

/** Writes all of `bytes` at `position`. */
export function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  return writevFully(handle, [bytes], position)
}

/** Writes all of `chunks`, in order, at `position`: one writev may take fewer bytes than it was given. */
async function writevFully(handle: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let rest = chunks
  while (rest.length > 0) {
    const { bytesWritten } = await handle.writev(rest, position)
    position += bytesWritten
    let skip = bytesWritten
    let whole = 0
    while (whole < rest.length && skip >= (rest[whole] as Uint8Array).length) {
      skip -= (rest[whole] as Uint8Array).length
      whole += 1
    }
    rest = rest.slice(whole)
    if (skip > 0) rest[0] = (rest[0] as Uint8Array).subarray(skip)
  }
}

/**
 * Reads `length` bytes from `start` through `buffer`, yielding views of it (each valid until the next is
 * pulled). A file shorter than that is an error: the caller knows how much it wrote there.
 */
export async function* readRange(
  handle: FileHandle,
  start: number,
  length: number,
  buffer: Buffer,
): AsyncGenerator<Buffer> {
  for (let done = 0; done < length; ) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, length - done), start + done)
    if (bytesRead === 0)
      throw new Error(`expected ${length} bytes from offset ${start}, the file ends after ${done}`)
    yield buffer.subarray(0, bytesRead)
    done += bytesRead
  }
}
