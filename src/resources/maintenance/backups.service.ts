// Backup and restore, since losing files is what users of a self-hosted store fear most. A backup is a
// directory: the database (SQLite: `coffer.sqlite`, an online snapshot; PostgreSQL: `coffer.pgdump`, from
// pg_dump), the blobs of files and previews under `blobs/` as the local store keeps them, and `manifest.json`,
// written last, so that a backup without it is known to be incomplete. Taken while the server runs: a hold
// (backup_holds) keeps the blobs of files deleted meanwhile until they are copied, so every row of the
// snapshot finds its blob in the backup. A restore goes into an empty DATA_DIR (and, with PostgreSQL, an
// empty database), then the server's start-up sweep and storage check tidy what the snapshot caught mid-way.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import { BlobNotFoundError } from '../../platform/blob/blob-store.ts'
import type { Db } from '../../platform/db/database.ts'
import { AppError, invalid } from '../../platform/errors.ts'
import type { BackupsRepository } from './backups.repository.ts'

/** How long a hold lasts unless renewed: a backup that dies holds back blob removals no longer than this. */
const HOLD_MS = 10 * 60_000
const MANIFEST = 'manifest.json'
const SQLITE_FILE = 'coffer.sqlite'
const PG_DUMP_FILE = 'coffer.pgdump'
const BLOBS_DIR = 'blobs'
const BLOB_SUFFIX = '.blob'
/** The key prefixes whose blobs rows own (blob/blob-keys.ts). */
const BACKED_UP = ['files/', 'previews/'] as const

type Engine = Db['engine']

export interface BackupManifest {
  format: 'coffer-backup'
  version: 1
  engine: Engine
  createdAt: string
  blobs: number
  bytes: number
}

/** Runs a PostgreSQL client tool, with the database's address in the environment, never on a command line. */
async function pgTool(tool: 'pg_dump' | 'pg_restore', databaseUrl: string, args: string[]): Promise<void> {
  const url = new URL(databaseUrl)
  const env = {
    ...process.env,
    PGHOST: url.hostname,
    PGPORT: url.port || '5432',
    PGUSER: decodeURIComponent(url.username),
    PGPASSWORD: decodeURIComponent(url.password),
    PGDATABASE: decodeURIComponent(url.pathname.slice(1)),
  }
  // pg_restore writes to the database it is given, rather than a script, only when given one.
  const dbArgs = tool === 'pg_restore' ? [`--dbname=${env.PGDATABASE}`] : []
  const stderr: string[] = []
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(tool, [...dbArgs, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk))
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new AppError('unavailable', `${tool} is not installed; it comes with PostgreSQL's client tools.`)
          : error,
      ),
    )
    child.on('close', resolve)
  })
  if (code !== 0) {
    throw new AppError('unavailable', `${tool} failed: ${stderr.join('').trim().split('\n').at(-1) ?? code}`)
  }
}

/** Every file under `dir`, as paths relative to it with `/` between segments. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
}

/** Whether `dir` is missing or an empty directory (a file there is neither). */
async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException
    if (code === 'ENOENT') return true
    if (code === 'ENOTDIR') return false
    throw error
  }
}

/** The manifest of a complete backup in `dir`; a clear error for anything else. */
export async function readManifest(dir: string): Promise<BackupManifest> {
  let manifest: BackupManifest
  try {
    manifest = JSON.parse(await readFile(path.join(dir, MANIFEST), 'utf8')) as BackupManifest
  } catch {
    throw invalid(
      `${dir} holds no complete Coffer backup (no readable ${MANIFEST}).`,
      'Give the directory a backup wrote.',
    )
  }
  if (manifest.format !== 'coffer-backup' || manifest.version !== 1) {
    throw invalid(
      `${dir} holds a backup of another format (${MANIFEST} says ${manifest.format} ${manifest.version}).`,
    )
  }
  return manifest
}

export class BackupsService {
  readonly #engine: Engine
  readonly #databaseUrl: string | undefined
  readonly #backups: BackupsRepository
  readonly #blobs: BlobStore

  constructor(deps: {
    engine: Engine
    databaseUrl: string | undefined
    backups: BackupsRepository
    blobs: BlobStore
  }) {
    this.#engine = deps.engine
    this.#databaseUrl = deps.databaseUrl
    this.#backups = deps.backups
    this.#blobs = deps.blobs
  }

  /** Backs up the database and the blobs into `to`, a new or empty directory, while the server runs. */
  async backup(to: string): Promise<BackupManifest> {
    if (!(await isEmptyDir(to))) throw invalid(`${to} is not an empty directory; back up into a new one.`)
    await mkdir(to, { recursive: true })
    const hold = `backup-${randomBytes(8).toString('hex')}`
    // Taken before the snapshot: a deletion whose rows the snapshot holds commits after it, and then finds
    // the hold and leaves the blobs for the sweep.
    await this.#backups.hold(hold, Date.now() + HOLD_MS)
    const renew = setInterval(
      () => void this.#backups.hold(hold, Date.now() + HOLD_MS).catch(() => {}),
      HOLD_MS / 5,
    )
    try {
      if (this.#engine === 'sqlite') await this.#backups.snapshotSqlite(path.join(to, SQLITE_FILE))
      else
        await pgTool('pg_dump', this.#databaseUrl as string, [
          '--format=custom',
          '--no-owner',
          `--file=${path.join(to, PG_DUMP_FILE)}`,
        ])
      let blobs = 0
      let bytes = 0
      for (const prefix of BACKED_UP) {
        for await (const listed of this.#blobs.list(prefix)) {
          const file = path.join(to, BLOBS_DIR, `${listed.key}${BLOB_SUFFIX}`)
          await mkdir(path.dirname(file), { recursive: true })
          try {
            await pipeline(await this.#blobs.get(listed.key), createWriteStream(file))
          } catch (error) {
            // An orphan the storage check removed meanwhile: no row of the snapshot needs it.
            if (error instanceof BlobNotFoundError) continue
            throw error
          }
          blobs++
          bytes += listed.size
        }
      }
      const manifest: BackupManifest = {
        format: 'coffer-backup',
        version: 1,
        engine: this.#engine,
        createdAt: new Date().toISOString(),
        blobs,
        bytes,
      }
      await writeFile(path.join(to, `${MANIFEST}.tmp`), `${JSON.stringify(manifest, null, 2)}\n`)
      await rename(path.join(to, `${MANIFEST}.tmp`), path.join(to, MANIFEST))
      return manifest
    } finally {
      clearInterval(renew)
      await this.#backups.release(hold)
    }
  }

  /**
   * Brings a backup's blobs into this store, which must have none; the database must have been restored
   * first (`restoreDatabase`). Forgets the holds the snapshot caught.
   */
  async restoreBlobs(from: string): Promise<{ blobs: number }> {
    for (const prefix of BACKED_UP) {
      for await (const listed of this.#blobs.list(prefix)) {
        throw invalid(
          `The blob store already holds ${listed.key}: restore into an empty DATA_DIR, or an empty bucket.`,
        )
      }
    }
    const dir = path.join(from, BLOBS_DIR)
    let blobs = 0
    for (const file of await filesUnder(dir).catch(() => [])) {
      if (!file.endsWith(BLOB_SUFFIX)) continue
      const source = path.join(dir, file)
      // Its length lets an object store take it in one streamed PUT.
      const { size } = await stat(source)
      await this.#blobs.put(file.slice(0, -BLOB_SUFFIX.length), createReadStream(source), size)
      blobs++
    }
    await this.#backups.releaseAll()
    return { blobs }
  }
}

/**
 * Restores a backup's database: with SQLite, its snapshot becomes DATA_DIR's database, which must not exist
 * yet; with PostgreSQL, pg_restore fills the database, which must be empty (`isEmpty`, checked by the
 * caller on an open connection). The engine of the backup must be the configured one.
 */
export async function restoreDatabase(options: {
  from: string
  engine: Engine
  dataDir: string
  databaseUrl: string | undefined
  targetIsEmpty: () => Promise<boolean>
}): Promise<BackupManifest> {
  const manifest = await readManifest(options.from)
  if (manifest.engine !== options.engine) {
    throw invalid(
      `The backup is of a ${manifest.engine} database, and this Coffer is configured for ${options.engine}.`,
      manifest.engine === 'postgres'
        ? 'Set DATABASE_URL to an empty PostgreSQL database.'
        : 'Unset DATABASE_URL.',
    )
  }
  if (options.engine === 'sqlite') {
    const target = path.join(options.dataDir, SQLITE_FILE)
    if (
      await stat(target).then(
        () => true,
        () => false,
      )
    ) {
      throw invalid(`${target} exists: restore into an empty DATA_DIR.`)
    }
    await mkdir(options.dataDir, { recursive: true })
    await copyFile(path.join(options.from, SQLITE_FILE), target)
  } else {
    if (!(await options.targetIsEmpty())) {
      throw invalid('The PostgreSQL database of DATABASE_URL is not empty: restore into an empty one.')
    }
    await pgTool('pg_restore', options.databaseUrl as string, [
      '--no-owner',
      '--no-privileges',
      '--exit-on-error',
      path.join(options.from, PG_DUMP_FILE),
    ])
  }
  return manifest
}
