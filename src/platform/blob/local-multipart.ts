// Multipart uploads of LocalBlobStore. An upload is a directory `<root>/.tmp/<uploadId>.mpu/` holding
//   data                    the blob being assembled: part n is written in place at offset (n - 1) × SLOT_BYTES
//   <n>.slot                the claim on part n's slot in `data`: a symbolic link to the id of the write holding it
//   <n>-<w>-<size>.slotted  write w of part n is in its slot, whole
//   <n>-<w>.part            write w of part n, in a file of its own, under way...
//   <n>-<w>-<size>.part     ...and whole
// A part announced at no more than SLOT_BYTES (the part size of the @vercel/blob client) claims its slot and is
// streamed into it chunk by chunk; a longer part, one of unknown length, or another write of a number whose
// slot is claimed gets a file of its own. A claim is created exclusively and only its own write, failing,
// gives it back, so two writes of a number never share bytes. (A link is created atomically with its target:
// the claim and the name of its holder appear together, with no content to write and sync.) The names of whole
// writes carry all there is to know about them, so one directory listing lists the parts.
//
// Every part is fsynced, and the directory with it, before writePart resolves: an acknowledged part survives a
// crash of the machine, and the state is all in files, for any process sharing the root to list or complete.
//
// Completion first renames the directory away: from then on no write, abort or other completion reaches it.
// When the listed parts are 1..K, all in their slots, full except the last, and every write holding a slot is
// whole (none can still write, past the end), `data` is the blob: it is truncated, fsynced and renamed into
// place, with no byte copied. Otherwise the listed parts are copied in order into a new file. Abort renames the
// directory away too, then removes it; a write still in flight then writes into files already unlinked.
import { randomBytes } from 'node:crypto'
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises'
import path from 'node:path'
import {
  assertPartNumber,
  assertValidKey,
  type BlobSource,
  InvalidPartError,
  type MultipartBlob,
  type MultipartUpload,
  MultipartUploadNotFoundError,
  PartLengthError,
  type PartRef,
  type WrittenPart,
} from './blob-store.ts'
import { Digester } from './content-digest.ts'
import { errorCode, isMissing, readRange, syncDir, writeChunks, writeFully } from './local-files.ts'
import {
  coversHeadOf,
  type PartReader,
  type PrefixDigest,
  PrefixDigests,
  READ_BYTES,
} from './prefix-digests.ts'
import { withHeldErrors } from './sources.ts'

/** The room each part number has in `data`: the part size of the @vercel/blob client. */
export const SLOT_BYTES = 8 * 1024 * 1024

const LIVE_SUFFIX = '.mpu'
/** A whole write: part number, write id, size; in its slot, or in a file. */
const WHOLE = /^([1-9][0-9]{0,4})-([0-9a-f]{16})-(0|[1-9][0-9]{0,15})\.(slotted|part)$/
/** A directory renamed away by a completion or an abort, which removes it when done. */
const CLOSING_SUFFIX = '.closing'
const DATA = 'data'
const UPLOAD_ID = /^[0-9a-f]{32}$/
/** `s` (in its slot) or `f` (in a file), the write's id, and the size. */
const ETAG = /^([sf])([0-9a-f]{16})-(0|[1-9][0-9]{0,15})$/

interface Part extends WrittenPart {
  inSlot: boolean
  /** The id of the write that stored it. */
  write: string
}

const slotOffset = (partNumber: number) => (partNumber - 1) * SLOT_BYTES
const claimName = (partNumber: number) => `${partNumber}.slot`
const partialName = (partNumber: number, write: string) => `${partNumber}-${write}.part`
const wholeName = (part: Part) =>
  `${part.partNumber}-${part.write}-${part.size}.${part.inSlot ? 'slotted' : 'part'}`
const etagOf = (inSlot: boolean, write: string, size: number) => `${inSlot ? 's' : 'f'}${write}-${size}`

/** The whole writes among the names of an upload directory. */
function wholeParts(names: string[]): Part[] {
  const parts: Part[] = []
  for (const name of names) {
    const match = WHOLE.exec(name)
    if (!match) continue
    const [, number, write, size, kind] = match as unknown as [string, string, string, string, string]
    const inSlot = kind === 'slotted'
    parts.push({
      partNumber: Number(number),
      etag: etagOf(inSlot, write, Number(size)),
      size: Number(size),
      inSlot,
      write,
    })
  }
  return parts
}

function partOf(ref: PartRef): Part {
  const match = ETAG.exec(typeof ref.etag === 'string' ? ref.etag : '')
  if (!match) throw new InvalidPartError(ref.partNumber, 'its etag was not given out by this store')
  const [, kind, write, size] = match as unknown as [string, string, string, string]
  if (kind === 's' && Number(size) > SLOT_BYTES) {
    throw new InvalidPartError(ref.partNumber, 'its etag was not given out by this store')
  }
  return { partNumber: ref.partNumber, etag: ref.etag, size: Number(size), inSlot: kind === 's', write }
}

export class LocalMultipart {
  readonly #tempDir: string
  readonly #place: (key: string, file: string) => Promise<void>
  readonly #tempFile: () => string
  readonly #digests = new PrefixDigests()

  /**
   * `tempDir` holds the uploads; `place` durably moves a finished file in it to the blob of a key; `tempFile`
   * names a new temporary file there.
   */
  constructor(deps: {
    tempDir: string
    place: (key: string, file: string) => Promise<void>
    tempFile: () => string
  }) {
    this.#tempDir = deps.tempDir
    this.#place = deps.place
    this.#tempFile = deps.tempFile
  }

  async create(key: string): Promise<MultipartUpload> {
    assertValidKey(key)
    const uploadId = randomBytes(16).toString('hex')
    const dir = this.#dir({ key, uploadId })
    await mkdir(dir).catch(async (error: unknown) => {
      // As for put: the temp directory may have been removed since the store was opened.
      if (errorCode(error) !== 'ENOENT') throw error
      await mkdir(this.#tempDir, { recursive: true })
      await mkdir(dir)
    })
    await (await open(path.join(dir, DATA), 'wx')).close()
    await syncDir(dir)
    await syncDir(this.#tempDir)
    return { key, uploadId }
  }

  writePart(
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length: number | undefined,
  ): Promise<WrittenPart> {
    return withHeldErrors(data, () => this.#writePart(upload, partNumber, data, length))
  }

  async #writePart(
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length: number | undefined,
  ): Promise<WrittenPart> {
    assertPartNumber(partNumber)
    if (length !== undefined && !(Number.isSafeInteger(length) && length >= 0)) {
      throw new RangeError(`a part length must be a whole number of bytes, not ${length}`)
    }
    const dir = this.#dir(upload)
    const write = randomBytes(8).toString('hex')
    const source = data instanceof Uint8Array ? [data] : data
    const inSlot =
      length !== undefined && length <= SLOT_BYTES && (await this.#claim(upload, dir, partNumber, write))
    let size: number
    try {
      size = inSlot
        ? await this.#writeSlot(dir, partNumber, write, source, length as number)
        : await this.#writeFile(dir, partNumber, write, source, length)
    } catch (error) {
      // The directory went away mid-write: the upload was completed or aborted meanwhile.
      if (isMissing(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      throw error
    }
    const part: Part = { partNumber, etag: etagOf(inSlot, write, size), size, inSlot, write }
    this.#digests.landed(upload.uploadId, part, this.#reader(dir))
    return { partNumber, etag: part.etag, size }
  }

  async listParts(upload: MultipartUpload): Promise<WrittenPart[]> {
    return wholeParts(await this.#names(upload, this.#dir(upload))).map(({ partNumber, etag, size }) => ({
      partNumber,
      etag,
      size,
    }))
  }

  async complete(upload: MultipartUpload, refs: PartRef[]): Promise<MultipartBlob> {
    const dir = this.#dir(upload)
    assertValidKey(upload.key)
    const listed = refs.map(partOf)
    for (const [i, part] of listed.entries()) {
      assertPartNumber(part.partNumber)
      if (i > 0 && part.partNumber <= (listed[i - 1] as Part).partNumber) {
        throw new InvalidPartError(part.partNumber, 'parts must be listed in ascending order, each once')
      }
    }
    // Before anything changes, so that a list the caller can correct leaves the upload as it was.
    verify(listed, await this.#names(upload, dir))
    const digest = await this.#digests.take(upload.uploadId)
    const closing = this.#closingDir(upload)
    try {
      await rename(dir, closing)
    } catch (error) {
      if (isMissing(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      throw error
    }
    try {
      // The directory is ours alone now: what it holds no longer changes, but for writes still under way.
      const names = await this.#names(upload, closing)
      verify(listed, names)
      const head = digest && coversHeadOf(digest, listed) ? digest : { hash: new Digester(), parts: [] }
      if (inPlace(listed, names)) {
        return await this.#completeInPlace(upload.key, closing, listed, head)
      }
      return await this.#assemble(upload.key, closing, listed, head)
    } finally {
      await rm(closing, { recursive: true, force: true })
    }
  }

  async abort(upload: MultipartUpload): Promise<void> {
    // An id this store cannot have given out names no upload, and there is nothing to remove.
    if (!UPLOAD_ID.test(String(upload?.uploadId))) return
    const dir = this.#dir(upload)
    this.#digests.forget(upload.uploadId)
    const closing = this.#closingDir(upload)
    try {
      await rename(dir, closing)
    } catch (error) {
      if (isMissing(error)) return
      throw error
    }
    await rm(closing, { recursive: true, force: true })
  }

  /** The live directory of an upload; an id this store cannot have given out names no upload. */
  #dir(upload: MultipartUpload): string {
    if (typeof upload?.uploadId !== 'string' || !UPLOAD_ID.test(upload.uploadId)) {
      throw new MultipartUploadNotFoundError(String(upload?.uploadId))
    }
    return path.join(this.#tempDir, upload.uploadId + LIVE_SUFFIX)
  }

  #closingDir(upload: MultipartUpload): string {
    return path.join(this.#tempDir, `${upload.uploadId}.${randomBytes(4).toString('hex')}${CLOSING_SUFFIX}`)
  }

  /** Claims part `partNumber`'s slot for `write`; false when another write holds it. */
  async #claim(upload: MultipartUpload, dir: string, partNumber: number, write: string): Promise<boolean> {
    try {
      await symlink(write, path.join(dir, claimName(partNumber)))
      return true
    } catch (error) {
      if (errorCode(error) === 'EEXIST') return false
      if (isMissing(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      throw error
    }
  }

  async #writeSlot(
    dir: string,
    partNumber: number,
    write: string,
    source: AsyncIterable<unknown> | Iterable<unknown>,
    length: number,
  ): Promise<number> {
    let whole: string | undefined
    try {
      const handle = await open(path.join(dir, DATA), 'r+')
      try {
        const size = await writeChunks(handle, source, slotOffset(partNumber), length, () =>
          lengthError(partNumber, length, 'more came'),
        )
        if (size !== length) throw lengthError(partNumber, length, `only ${size} came`)
        whole = path.join(dir, wholeName({ partNumber, write, size, inSlot: true, etag: '' }))
        await writeFile(whole, '', { flag: 'wx' })
        // The bytes, and the directory entries of the claim and of the name that says they are whole: at once.
        await Promise.all([handle.sync(), syncDir(dir)])
        return size
      } finally {
        await handle.close()
      }
    } catch (error) {
      // Gives the slot back to a later write of the number, which overwrites what this one left there.
      if (whole) await rm(whole, { force: true })
      await unlink(path.join(dir, claimName(partNumber))).catch(() => {})
      throw error
    }
  }

  async #writeFile(
    dir: string,
    partNumber: number,
    write: string,
    source: AsyncIterable<unknown> | Iterable<unknown>,
    length: number | undefined,
  ): Promise<number> {
    const partial = path.join(dir, partialName(partNumber, write))
    let whole: string | undefined
    const handle = await open(partial, 'wx')
    try {
      try {
        const size = await writeChunks(handle, source, 0, length, () =>
          lengthError(partNumber, length, 'more came'),
        )
        if (length !== undefined && size !== length) {
          throw lengthError(partNumber, length, `only ${size} came`)
        }
        whole = path.join(dir, wholeName({ partNumber, write, size, inSlot: false, etag: '' }))
        await rename(partial, whole)
        await Promise.all([handle.sync(), syncDir(dir)])
        return size
      } finally {
        await handle.close()
      }
    } catch (error) {
      await rm(partial, { force: true })
      if (whole) await rm(whole, { force: true })
      throw error
    }
  }

  /** The names in an upload directory; MultipartUploadNotFoundError when there is none. */
  async #names(upload: MultipartUpload, dir: string): Promise<string[]> {
    try {
      return await readdir(dir)
    } catch (error) {
      if (isMissing(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      throw error
    }
  }

  async #completeInPlace(
    key: string,
    closing: string,
    listed: Part[],
    head: PrefixDigest,
  ): Promise<MultipartBlob> {
    const data = path.join(closing, DATA)
    const size = listed.reduce((sum, part) => sum + part.size, 0)
    const handle = await open(data, 'r+')
    try {
      const buffer = Buffer.allocUnsafe(READ_BYTES)
      for (const part of listed.slice(head.parts.length)) {
        for await (const piece of readRange(handle, slotOffset(part.partNumber), part.size, buffer)) {
          head.hash.update(piece)
        }
      }
      await handle.truncate(size)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await this.#place(key, data)
    return { size, ...head.hash.digest() }
  }

  /** Copies the listed parts in order into a new file, which becomes the blob. */
  async #assemble(key: string, closing: string, listed: Part[], head: PrefixDigest): Promise<MultipartBlob> {
    const temp = this.#tempFile()
    const out = await open(temp, 'wx')
    try {
      const read = this.#reader(closing)
      const buffer = Buffer.allocUnsafe(READ_BYTES)
      let size = 0
      try {
        for (const [i, part] of listed.entries()) {
          const hashed = i < head.parts.length
          for await (const piece of read(part, buffer)) {
            if (!hashed) head.hash.update(piece)
            await writeFully(out, piece, size)
            size += piece.length
          }
        }
        await out.sync()
      } finally {
        await out.close()
      }
      await this.#place(key, temp)
      return { size, ...head.hash.digest() }
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
  }

  /** Reads parts back from the upload directory `dir`. */
  #reader(dir: string): PartReader {
    return async function* (written: WrittenPart, buffer: Buffer) {
      const part = partOf(written)
      const handle: FileHandle = await open(path.join(dir, part.inSlot ? DATA : wholeName(part)), 'r')
      try {
        yield* readRange(handle, part.inSlot ? slotOffset(part.partNumber) : 0, part.size, buffer)
      } finally {
        await handle.close()
      }
    }
  }
}

/** Checks that every listed part is whole among `names`; InvalidPartError for the first that is not. */
function verify(listed: Part[], names: string[]): void {
  const present = new Set(names)
  const missing = listed.find((part) => !present.has(wholeName(part)))
  if (missing) {
    throw new InvalidPartError(missing.partNumber, 'it was not written, or another write of it replaced it')
  }
}

/**
 * Whether `data` already is the blob: the parts listed are 1..K, each in its slot, all full but the last,
 * and every write holding a slot is whole (one that is not could still write, past the end).
 */
function inPlace(listed: Part[], names: string[]): boolean {
  const whole = new Set(wholeParts(names).flatMap((part) => (part.inSlot ? [part.partNumber] : [])))
  return (
    names.every((name) => !name.endsWith('.slot') || whole.has(Number.parseInt(name, 10))) &&
    listed.every(
      (part, i) =>
        part.partNumber === i + 1 && part.inSlot && (i === listed.length - 1 || part.size === SLOT_BYTES),
    )
  )
}

function lengthError(partNumber: number, length: number | undefined, got: string): Error {
  return new PartLengthError(partNumber, length as number, got)
}

/**
 * Whether an entry of the temporary directory is an upload directory nobody touched since `cutoff`: neither
 * it (a part or claim added) nor any file in it (bytes written).
 */
/**
 * The bytes an upload directory holds and the last time anything in it was written (a claim is a link, whose
 * own time counts); undefined for an entry of the temporary directory that is not an upload's.
 */
export async function uploadDirState(dir: string): Promise<{ size: number; modifiedAt: number } | undefined> {
  const name = path.basename(dir)
  if (!name.endsWith(LIVE_SUFFIX) && !name.endsWith(CLOSING_SUFFIX)) return undefined
  let newest = (await lstat(dir)).mtimeMs
  let size = 0
  for (const entry of await readdir(dir)) {
    const info = await lstat(path.join(dir, entry))
    newest = Math.max(newest, info.mtimeMs)
    if (info.isFile()) size += info.size
  }
  return { size, modifiedAt: newest }
}
