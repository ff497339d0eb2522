// BlobStore on the local filesystem. The blob of key `a/b/c` is the file `<root>/a/b/c.blob`: the suffix
// keeps a blob and the directory of the keys beneath it (`a/b/c/d`) apart. A write goes to a temporary
// file in `<root>/.tmp` (same filesystem, a name no key can reach), is fsynced, then renamed over the final
// name and the directory fsynced, so a blob appears whole or not at all, even across a crash. Multipart uploads
// live in `<root>/.tmp` too, one directory each (see local-multipart.ts).
//
// The driver never follows a symbolic link below the root: an operation whose path crosses one fails. The
// root itself may be a link (a data directory mounted elsewhere). This guards against a misplaced link,
// not against someone who can already write into the root.
import { randomBytes } from 'node:crypto'
import { constants, type Dirent, type Stats } from 'node:fs'
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Readable } from 'node:stream'
import {
  assertRangeWithin,
  assertValidKey,
  BlobNotFoundError,
  type BlobSource,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  InvalidBlobKeyError,
  isValidKey,
  type Leftover,
  type ListedBlob,
  type MultipartBlob,
  type MultipartUpload,
  type PartRef,
  type StoredObject,
  type WrittenPart,
} from './blob-store.ts'
import { errorCode, isMissing, syncDir, writeChunks } from './local-files.ts'
import { LocalMultipart, uploadDirState } from './local-multipart.ts'
import { LocalReadStream } from './local-read-stream.ts'
import { measured, withHeldErrors } from './sources.ts'

const TEMP_DIR = '.tmp'
const BLOB_SUFFIX = '.blob'

/**
 * How long a read trusts a directory it found to be a real one (not a link). Each check is a trip through
 * libuv's thread pool, and a blob read makes two of them (`files/`, `files/<account>/`) before its own open:
 * for a zip of a thousand small files they were a third of the CPU it spent per file. A link misplaced after a
 * check is still refused within a second, which is what the check is for (see the top of this file). Writes
 * and deletes always check: they must not create or remove anything through a link.
 */
const VERIFIED_DIR_MS = 1000
/** Directories remembered at most; the oldest are forgotten first. */
const VERIFIED_DIRS_MAX = 4096

function symlinkRefused(key: string): Error {
  return new Error(`refusing blob key ${key}: its path crosses a symbolic link below the blob root`)
}

export class LocalBlobStore implements BlobStore {
  readonly #root: string
  readonly #multipart: LocalMultipart
  /** Directory → when its check stops being trusted by reads (VERIFIED_DIR_MS). */
  readonly #verifiedDirs = new Map<string, number>()

  private constructor(root: string) {
    this.#root = root
    this.#multipart = new LocalMultipart({
      tempDir: path.join(root, TEMP_DIR),
      place: (key, file) => this.#place(key, file),
      tempFile: () => this.#tempFile(),
    })
  }

  /** Creates the root if needed. What crashed writes left is the storage reconciler's to remove. */
  static async open(root: string): Promise<LocalBlobStore> {
    const resolved = path.resolve(root)
    await mkdir(path.join(resolved, TEMP_DIR), { recursive: true })
    return new LocalBlobStore(resolved)
  }

  /**
   * The blob file of `key`, after checking each directory on the way from the root. `dirsExist` is false
   * when one of them is missing (so the blob is absent); a symbolic link among them is refused.
   */
  async #locate(
    key: string,
    options: { forRead?: boolean } = {},
  ): Promise<{ file: string; dirsExist: boolean }> {
    assertValidKey(key)
    const file = path.join(this.#root, key + BLOB_SUFFIX)
    // Unreachable while assertValidKey holds; it keeps a future loosening of the key rules from opening an
    // escape out of the root.
    if (!file.startsWith(this.#root + path.sep)) throw new InvalidBlobKeyError(key)
    const now = options.forRead ? performance.now() : 0
    let dir = this.#root
    for (const segment of key.split('/').slice(0, -1)) {
      dir = path.join(dir, segment)
      if (options.forRead && (this.#verifiedDirs.get(dir) ?? 0) > now) continue
      let info: Stats
      try {
        info = await lstat(dir)
      } catch (error) {
        if (isMissing(error)) return { file, dirsExist: false }
        throw error
      }
      if (info.isSymbolicLink()) throw symlinkRefused(key)
      if (!info.isDirectory()) return { file, dirsExist: false }
      if (options.forRead) this.#trustDir(dir, now)
    }
    return { file, dirsExist: true }
  }

  #trustDir(dir: string, now: number): void {
    this.#verifiedDirs.delete(dir)
    if (this.#verifiedDirs.size >= VERIFIED_DIRS_MAX) {
      this.#verifiedDirs.delete(this.#verifiedDirs.keys().next().value as string)
    }
    this.#verifiedDirs.set(dir, now + VERIFIED_DIR_MS)
  }

  /** lstat of the blob file itself, undefined when absent; a link in its place is refused. */
  async #lstatBlob(key: string, file: string): Promise<Stats | undefined> {
    try {
      const info = await lstat(file)
      if (info.isSymbolicLink()) throw symlinkRefused(key)
      return info
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
  }

  async put(key: string, data: BlobSource, length?: number): Promise<BlobStat> {
    // Refuse a bad key before consuming any of the source.
    assertValidKey(key)
    const source = length === undefined ? data : measured(data, length).chunks
    return withHeldErrors(data, () => this.#put(key, source))
  }

  async #put(key: string, data: BlobSource): Promise<BlobStat> {
    const temp = this.#tempFile()
    const handle = await open(temp, 'wx').catch(async (error: NodeJS.ErrnoException) => {
      // The temp directory is made at open; if the tree was removed or remounted since, make it again.
      if (error.code !== 'ENOENT') throw error
      await mkdir(path.dirname(temp), { recursive: true })
      return open(temp, 'wx')
    })
    try {
      let size: number
      try {
        size = await writeChunks(handle, data instanceof Uint8Array ? [data] : data, 0)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await this.#place(key, temp)
      return { size }
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
  }

  createMultipart(key: string): Promise<MultipartUpload> {
    return this.#multipart.create(key)
  }

  writePart(
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length?: number,
  ): Promise<WrittenPart> {
    return this.#multipart.writePart(upload, partNumber, data, length)
  }

  listParts(upload: MultipartUpload): Promise<WrittenPart[]> {
    return this.#multipart.listParts(upload)
  }

  completeMultipart(upload: MultipartUpload, parts: PartRef[]): Promise<MultipartBlob> {
    return this.#multipart.complete(upload, parts)
  }

  abortMultipart(upload: MultipartUpload): Promise<void> {
    return this.#multipart.abort(upload)
  }

  /** A new name in the temporary directory, which no key can reach. */
  #tempFile(): string {
    return path.join(this.#root, TEMP_DIR, `${randomBytes(16).toString('hex')}.part`)
  }

  /**
   * Moves the finished, fsynced temporary file `temp` to the blob of `key`, durably. The key's path is
   * checked only now: a transfer may have taken long, and the tree may have changed meanwhile.
   */
  async #place(key: string, temp: string): Promise<void> {
    const { file, dirsExist } = await this.#locate(key)
    const dir = path.dirname(file)
    if (!dirsExist) await this.#makeDirs(dir)
    await this.#lstatBlob(key, file)
    await rename(temp, file)
    await syncDir(dir)
  }

  /** mkdir -p, then fsyncs each parent that gained an entry, so the new path survives a crash. */
  async #makeDirs(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true })
    if (first === undefined) return
    const parents = [path.dirname(first)]
    for (const segment of path.relative(path.dirname(first), path.dirname(dir)).split(path.sep)) {
      if (segment) parents.push(path.join(parents.at(-1) as string, segment))
    }
    await Promise.all(parents.map(syncDir))
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const { file, dirsExist } = await this.#locate(key, { forRead: true })
    if (!dirsExist) throw new BlobNotFoundError(key)
    let handle: FileHandle
    try {
      handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (error) {
      if (isMissing(error)) throw new BlobNotFoundError(key)
      if (errorCode(error) === 'ELOOP') throw symlinkRefused(key)
      throw error
    }
    try {
      // The open handle pins this version: a later rename or unlink does not change what it reads.
      const { size } = await handle.stat()
      if (range) assertRangeWithin(range, size)
      // Not a file stream: see local-read-stream.ts for why, and how much faster a download is.
      return range
        ? new LocalReadStream(handle, range.start, range.end + 1)
        : new LocalReadStream(handle, 0, size)
    } catch (error) {
      await handle.close()
      throw error
    }
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    const { file, dirsExist } = await this.#locate(key)
    if (!dirsExist) return undefined
    const info = await this.#lstatBlob(key, file)
    return info?.isFile() ? { size: info.size } : undefined
  }

  /**
   * The blob's file as a path below the root (`files/a/b.blob`), for a web server that serves the root itself
   * (nginx's X-Accel-Redirect); undefined when there is no blob. Checked as `get` checks it: a symbolic link on
   * the way is refused, so nothing outside the root is ever named. The path holds only the characters of a
   * key, `/` and `.`, so it goes into a URL as is.
   */
  async relativePath(key: string): Promise<string | undefined> {
    const { file, dirsExist } = await this.#locate(key)
    if (!dirsExist) return undefined
    const info = await this.#lstatBlob(key, file)
    return info?.isFile() ? key + BLOB_SUFFIX : undefined
  }

  async *list(prefix: string): AsyncIterable<ListedBlob> {
    if (prefix !== '') assertValidKey(prefix.replace(/\/$/, ''))
    // The directory to walk: the prefix's whole segments; a partial last segment filters names.
    const slash = prefix.lastIndexOf('/')
    const dir = path.join(this.#root, prefix.slice(0, slash + 1))
    let entries: Dirent[]
    try {
      const info = await lstat(dir)
      if (!info.isDirectory()) return
      entries = await readdir(dir, { recursive: true, withFileTypes: true })
    } catch (error) {
      if (isMissing(error)) return
      throw error
    }
    for (const entry of entries) {
      // Blob files only: no temporary state, and nothing reached through a link.
      if (!entry.isFile() || !entry.name.endsWith(BLOB_SUFFIX)) continue
      const file = path.join(entry.parentPath, entry.name)
      const key = path.relative(this.#root, file).slice(0, -BLOB_SUFFIX.length).split(path.sep).join('/')
      if (key.startsWith(TEMP_DIR) || !key.startsWith(prefix)) continue
      try {
        const info = await lstat(file)
        yield { key, size: info.size, modifiedAt: info.mtimeMs }
      } catch (error) {
        // Removed while listed.
        if (!isMissing(error)) throw error
      }
    }
  }

  async *inventory(): AsyncIterable<StoredObject> {
    const entries = await readdir(this.#root, { recursive: true, withFileTypes: true })
    for (const entry of entries) {
      if (entry.isDirectory()) continue
      const file = path.join(entry.parentPath, entry.name)
      const name = path.relative(this.#root, file).split(path.sep).join('/')
      if (name === TEMP_DIR || name.startsWith(`${TEMP_DIR}/`)) continue
      const blobKey = name.endsWith(BLOB_SUFFIX) ? name.slice(0, -BLOB_SUFFIX.length) : undefined
      try {
        const info = await lstat(file)
        // A link is never a blob: the driver refuses to follow one.
        const key = info.isFile() && blobKey !== undefined && isValidKey(blobKey) ? blobKey : undefined
        yield { key, name: key ?? name, size: info.size, modifiedAt: info.mtimeMs }
      } catch (error) {
        // Removed while listed.
        if (!isMissing(error)) throw error
      }
    }
  }

  async *leftovers(): AsyncIterable<Leftover> {
    const tempDir = path.join(this.#root, TEMP_DIR)
    for (const name of await readdir(tempDir)) {
      const entry = path.join(tempDir, name)
      try {
        const info = await lstat(entry)
        if (info.isFile()) yield { id: name, size: info.size, modifiedAt: info.mtimeMs }
        else if (info.isDirectory()) {
          const upload = await uploadDirState(entry)
          if (upload) yield { id: name, ...upload }
        }
      } catch (error) {
        // Finished or removed by another process meanwhile.
        if (!isMissing(error)) throw error
      }
    }
  }

  async removeLeftover(id: string): Promise<void> {
    // An entry of the temporary directory, by its name alone: nothing else can be reached.
    if (!/^[A-Za-z0-9._-]+$/.test(id) || id === '.' || id === '..') throw new Error(`not a leftover: ${id}`)
    await rm(path.join(this.#root, TEMP_DIR, id), { recursive: true, force: true })
  }

  async delete(key: string): Promise<void> {
    const { file, dirsExist } = await this.#locate(key)
    if (!dirsExist) return
    // Refuses a link in the blob's place rather than silently removing something it did not store.
    if ((await this.#lstatBlob(key, file)) === undefined) return
    await rm(file, { force: true })
  }
}
