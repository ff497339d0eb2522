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

/**
 * Writes every chunk of `source` from byte `start` of the file on and returns the byte count; `tooMany` is
 * thrown, before anything past it is written, once the count would exceed `limit`. Iterating (rather than
 * piping) stops at the source's first error, including a stream destroyed without one, and each write has
 * landed before the next chunk is pulled.
 */
export async function writeChunks(
  handle: FileHandle,
  source: AsyncIterable<unknown> | Iterable<unknown>,
  start: number,
  limit = Number.POSITIVE_INFINITY,
  tooMany: () => Error = () => new RangeError(`more than ${limit} bytes`),
): Promise<number> {
  let size = 0
  for await (const chunk of source) {
    if (!(chunk instanceof Uint8Array)) throw new TypeError('a blob source must yield Uint8Array chunks')
    if (size + chunk.length > limit) throw tooMany()
    await writeFully(handle, chunk, start + size)
    size += chunk.length
  }
  return size
}

/** Writes all of `bytes` at `position`: one write may take fewer bytes than it was given. */
export async function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let offset = 0; offset < bytes.length; ) {
    offset += (await handle.write(bytes, offset, bytes.length - offset, position + offset)).bytesWritten
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
