// Helpers shared by the BlobStore contract suites (blob-store.suite.ts and blob-store-multipart.suite.ts):
// keys of a test's own, whole reads, and sources that arrive in chunks or fail midway as a client's upload
// does.
import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { setImmediate as tick } from 'node:timers/promises'

export const MiB = 1024 * 1024

/** A key prefix no other test uses. */
export function scope(): string {
  return `t-${randomBytes(6).toString('hex')}`
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks)
}

export async function* chunksOf(content: Buffer, chunkSize: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < content.length; offset += chunkSize) {
    // Yield to the event loop so concurrent writers really interleave.
    await tick()
    yield content.subarray(offset, offset + chunkSize)
  }
}

/** Yields `head`, then fails the way a dropped client connection does. */
export async function* failingAfter(head: Buffer, error: Error): AsyncGenerator<Uint8Array> {
  yield head
  await tick()
  throw error
}

/** Every file under `dir` (none if it does not exist), as paths relative to it, sorted. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort()
}
