// What an uploader keeps to resume an upload after it was stopped (a killed program, a closed tab, a lost
// connection): the file's identity (name, size, modification time), the grant the server gave for it, and the
// multipart upload its parts went to. The server keeps those parts for the grant's life and lists them in the
// upload's status (docs/uploads.md, "Resuming an upload"); the upload queue (upload-queue.ts) asks it and sends
// only the missing parts. Where the records are kept is the caller's: a ResumeStore (a directory in Node,
// `fileResumeStore`; IndexedDB in a browser). This module runs in browsers too: Node's modules are imported only
// inside `fileResumeStore`'s methods, which a browser never calls (as save.ts does).
import type { StoredPart, UploadGrant } from './transfer.ts'

/** One unfinished upload, as kept between runs. */
export interface ResumeRecord {
  /** The file's identity (`resumeKeyOf`). */
  key: string
  name: string
  size: number
  /** The file's modification time (ms since the epoch): a file changed since is a new upload. */
  lastModified: number
  /** The grant the server gave for the upload: a secret, valid until its `expiresAt`. */
  grant: UploadGrant
  /** The multipart upload the parts went to, once one was created. */
  uploadId?: string
  /** The parts stored, as last reported. */
  parts?: StoredPart[]
  /** When the record was last written (ms since the epoch). */
  updatedAt: number
  /** Where the upload goes (the server, the folder), as its uploader names it: it resumes only there. */
  target?: string
}

/** Where the records of unfinished uploads are kept, by key. */
export interface ResumeStore {
  get(key: string): Promise<ResumeRecord | undefined>
  set(key: string, record: ResumeRecord): Promise<void>
  delete(key: string): Promise<void>
  list(): Promise<ResumeRecord[]>
}

/**
 * The identity of a file for resuming: its name (in Node, its absolute path), size and modification time. The
 * same file chosen again has the same key; a file changed since, another.
 */
export function resumeKeyOf(file: { name: string; size: number; lastModified: number }): string {
  return JSON.stringify([file.name, file.size, Math.trunc(file.lastModified)])
}

/** A record that may be used: the shape expected, and its grant not expired. */
export function usableRecord(record: unknown, now = Date.now()): record is ResumeRecord {
  const r = record as Partial<ResumeRecord> | null
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.key === 'string' &&
    typeof r.size === 'number' &&
    typeof r.grant?.intentId === 'string' &&
    typeof r.grant.expiresAt === 'string' &&
    Date.parse(r.grant.expiresAt) > now
  )
}

/** Records kept in memory, for one process (tests, a page that keeps nothing across reloads). */
export function memoryResumeStore(): ResumeStore {
  const records = new Map<string, ResumeRecord>()
  return {
    get: async (key) => structuredClone(records.get(key)),
    set: async (key, record) => void records.set(key, structuredClone(record)),
    delete: async (key) => void records.delete(key),
    list: async () => [...records.values()].map((record) => structuredClone(record)),
  }
}

/**
 * Node only: the records as files of `dir` (made on first write, mode 0700), one JSON file each, named by the
 * SHA-256 of the key, mode 0600 since a grant lets anyone send the file's bytes. Each is written to a temporary
 * file and renamed over the old, so a kill leaves the old record or the new one, never half of one. A record
 * that cannot be read (damaged, or its grant expired) is as none, and is removed.
 */
export function fileResumeStore(dir: string): ResumeStore {
  const node = async () => {
    const [fs, path, crypto] = await Promise.all([
      import('node:fs/promises'),
      import('node:path'),
      import('node:crypto'),
    ])
    const fileOf = (key: string) =>
      path.join(dir, `${crypto.createHash('sha256').update(key).digest('hex').slice(0, 32)}.json`)
    return { fs, path, crypto, fileOf }
  }
  const read = async (file: string): Promise<ResumeRecord | undefined> => {
    const { fs } = await node()
    const text = await fs.readFile(file, 'utf8').catch(() => undefined)
    if (text === undefined) return undefined
    let record: unknown
    try {
      record = JSON.parse(text)
    } catch {
      record = undefined
    }
    if (usableRecord(record)) return record
    await fs.rm(file, { force: true })
    return undefined
  }
  return {
    async get(key) {
      const { fileOf } = await node()
      const record = await read(fileOf(key))
      return record?.key === key ? record : undefined
    },
    async set(key, record) {
      const { fs, crypto, fileOf } = await node()
      await fs.mkdir(dir, { recursive: true, mode: 0o700 })
      const target = fileOf(key)
      const temporary = `${target}.${crypto.randomBytes(6).toString('hex')}.tmp`
      try {
        await fs.writeFile(temporary, JSON.stringify({ ...record, key }), { mode: 0o600, flag: 'wx' })
        await fs.rename(temporary, target)
      } catch (error) {
        await fs.rm(temporary, { force: true })
        throw error
      }
    },
    async delete(key) {
      const { fs, fileOf } = await node()
      await fs.rm(fileOf(key), { force: true })
    },
    async list() {
      const { fs, path } = await node()
      const names = await fs.readdir(dir).catch(() => [] as string[])
      const records = await Promise.all(
        names.filter((name) => name.endsWith('.json')).map((name) => read(path.join(dir, name))),
      )
      return records.filter((record): record is ResumeRecord => record !== undefined)
    },
  }
}
