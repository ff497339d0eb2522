// BlobStore on the local filesystem. A write goes to a temporary file in the same directory tree, is
// fsynced, then renamed over the final name, so a blob appears whole or not at all, even across a crash.
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, open, rename, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import {
  assertValidKey,
  BlobNotFoundError,
  type BlobStat,
  type BlobStore,
  type ByteRange,
} from './blob-store.ts'

const TEMP_DIR = '.tmp'

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'ENOENT'
}

export class LocalBlobStore implements BlobStore {
  readonly #root: string

  constructor(root: string) {
    this.#root = path.resolve(root)
  }

  #pathOf(key: string): string {
    assertValidKey(key)
    const full = path.join(this.#root, key)
    // assertValidKey already forbids `..`; this guards against any path the check might miss.
    if (!full.startsWith(this.#root + path.sep)) throw new BlobNotFoundError(key)
    return full
  }

  async put(key: string, data: AsyncIterable<Uint8Array> | Readable): Promise<BlobStat> {
    const target = this.#pathOf(key)
    const tempDir = path.join(this.#root, TEMP_DIR)
    await mkdir(tempDir, { recursive: true })
    const temp = path.join(tempDir, `${randomBytes(12).toString('hex')}.part`)
    try {
      // `flush` fsyncs the file before it is closed, so its bytes are on disk before the rename.
      await pipeline(data, createWriteStream(temp, { flags: 'wx', flush: true }))
      await mkdir(path.dirname(target), { recursive: true })
      await rename(temp, target)
      await this.#syncDir(path.dirname(target))
      const { size } = await stat(target)
      return { size }
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.#pathOf(key)
    try {
      // Open first, so a missing blob fails here rather than as a stream error mid-response.
      const handle = await open(file, 'r')
      return createReadStream('', { fd: handle, start: range?.start, end: range?.end })
    } catch (error) {
      if (isNotFound(error)) throw new BlobNotFoundError(key)
      throw error
    }
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    try {
      const info = await stat(this.#pathOf(key))
      return info.isFile() ? { size: info.size } : undefined
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.#pathOf(key), { force: true })
  }

  /** Makes a rename durable: the directory entry must reach the disk, not only the file's bytes. */
  async #syncDir(dir: string): Promise<void> {
    const handle = await open(dir, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }
}
