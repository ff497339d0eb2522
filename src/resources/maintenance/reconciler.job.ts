// The storage reconciler: compares the BlobStore with the database and reports, and repairs where that is
// safe, what does not match. Run at start, every STORAGE_CHECK_INTERVAL_SECONDS, and on demand
// (`npm run cli -- storage check [--repair]`). It finds:
// - blobs without rows (a file's or a preview's blob that no row owns, no upload under way claims and no
//   deletion has recorded): removed once older than any upload that could still claim them;
// - previews without files, the same way;
// - rows without blobs: reported loudly, never removed (the row is what the owner sees; the bytes are lost);
// - leftovers of unfinished writes and uploads: removed once untouched for as long;
// - readiness probes (blob/blob-keys.ts) whose removal failed (the store went down in between): removed
//   once a minute old;
// - anything else in the store's space (another program's objects, or ones that no key names): reported,
//   never removed, since Coffer did not write it.
// It works through the BlobStore contract alone (`inventory`, `stat`, `leftovers`), so any driver gets it, and
// it accounts for everything the store holds.

import { PROBE_PREFIX } from '../../platform/blob/blob-keys.ts'
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Exclusively } from '../../platform/db/database.ts'
import { Periodic } from '../../platform/jobs/periodic.ts'
import type { StorageRepository } from './storage.repository.ts'

/** The prefixes under which rows own blobs (blob/blob-keys.ts). */
const OWNED_PREFIXES = ['files/', 'previews/'] as const
type OwnedPrefix = (typeof OWNED_PREFIXES)[number]
/** A probe takes moments (its check gives up after 3 s): one this old was left behind. */
const PROBE_GRACE_MS = 60_000
const BATCH = 500
/** Keys named in a report at most, per finding; the counts are whole. */
const SAMPLE = 20

export interface Finding {
  count: number
  /** Up to SAMPLE of them. */
  sample: string[]
}

export interface StorageReport {
  checkedAt: string
  repair: boolean
  /** Everything the store holds (blobs, probes and anything else; no leftovers), and its bytes. */
  blobs: { count: number; bytes: number }
  /** Files' blobs no row owns and nothing claims, older than the grace period: removed when repairing. */
  orphanBlobs: Finding & { removed: number }
  /** The same of previews: previews whose file is gone. */
  orphanPreviews: Finding & { removed: number }
  /** Such blobs still within the grace period: an upload may yet claim them. */
  recentOrphans: number
  /** Rows whose blob is missing: never repaired, always reported. */
  missingBlobs: Finding
  /** Leftovers untouched for longer than the grace period: removed when repairing. */
  staleLeftovers: Finding & { removed: number; bytes: number }
  /** Leftovers touched recently: writes and uploads under way. */
  activeLeftovers: number
  /** Readiness probes older than a minute, whose removal failed: removed when repairing. */
  strayProbes: Finding & { removed: number }
  /** What the store holds that Coffer did not write (by its name in the store): reported, never removed. */
  unrecognised: Finding & { bytes: number }
  /** Whether anything is wrong that a repair does not fix (missing blobs). */
  problems: number
}

export interface ReconcilerLog {
  error(details: object, message: string): void
  info(details: object, message: string): void
}

const finding = (): Finding => ({ count: 0, sample: [] })

function note(found: Finding, what: string): void {
  found.count++
  if (found.sample.length < SAMPLE) found.sample.push(what)
}

export class StorageReconciler {
  readonly #blobs: BlobStore
  readonly #storage: StorageRepository
  readonly #graceMs: number
  readonly #intervalMs: number
  readonly #exclusively: Exclusively
  #schedule: Periodic | undefined

  /**
   * `graceMs`: how long a blob without a row, or a leftover, may be part of an upload still under way (the
   * longest grant). `intervalMs`: how often the job runs (and whether at start); 0 runs it only on demand.
   * `exclusively`: the job runs in one process at a time (Db.exclusively).
   */
  constructor(deps: {
    blobs: BlobStore
    storage: StorageRepository
    graceMs: number
    intervalMs: number
    exclusively: Exclusively
  }) {
    this.#blobs = deps.blobs
    this.#storage = deps.storage
    this.#graceMs = deps.graceMs
    this.#intervalMs = deps.intervalMs
    this.#exclusively = deps.exclusively
  }

  /** Compares the store with the database; with `repair`, removes orphan blobs and stale leftovers. */
  async check(options: { repair: boolean }): Promise<StorageReport> {
    const now = Date.now()
    const cutoff = now - this.#graceMs
    const report: StorageReport = {
      checkedAt: new Date(now).toISOString(),
      repair: options.repair,
      blobs: { count: 0, bytes: 0 },
      orphanBlobs: { ...finding(), removed: 0 },
      orphanPreviews: { ...finding(), removed: 0 },
      recentOrphans: 0,
      missingBlobs: finding(),
      staleLeftovers: { ...finding(), removed: 0, bytes: 0 },
      activeLeftovers: 0,
      strayProbes: { ...finding(), removed: 0 },
      unrecognised: { ...finding(), bytes: 0 },
      problems: 0,
    }

    // Everything the store holds, in one walk. Owned blobs without rows are settled a batch of keys at a time.
    const batches: Record<OwnedPrefix, { key: string; modifiedAt: number }[]> = {
      'files/': [],
      'previews/': [],
    }
    const settle = async (prefix: OwnedPrefix) => {
      const batch = batches[prefix]
      batches[prefix] = []
      const orphans = prefix === 'files/' ? report.orphanBlobs : report.orphanPreviews
      const standing = await this.#storage.standing(batch.map((blob) => blob.key))
      for (const blob of batch) {
        if (standing.has(blob.key)) continue
        if (blob.modifiedAt >= cutoff) {
          report.recentOrphans++
          continue
        }
        note(orphans, blob.key)
        if (options.repair) {
          await this.#blobs.delete(blob.key)
          orphans.removed++
        }
      }
    }
    for await (const object of this.#blobs.inventory()) {
      report.blobs.count++
      report.blobs.bytes += object.size
      const { key } = object
      const owned = OWNED_PREFIXES.find((prefix) => key?.startsWith(prefix))
      if (key !== undefined && owned) {
        batches[owned].push({ key, modifiedAt: object.modifiedAt })
        if (batches[owned].length === BATCH) await settle(owned)
      } else if (key?.startsWith(PROBE_PREFIX)) {
        if (object.modifiedAt >= now - PROBE_GRACE_MS) continue
        note(report.strayProbes, key)
        if (options.repair) {
          await this.#blobs.delete(key)
          report.strayProbes.removed++
        }
      } else {
        note(report.unrecognised, object.name)
        report.unrecognised.bytes += object.size
      }
    }
    for (const prefix of OWNED_PREFIXES) await settle(prefix)

    // Rows without blobs, walking each table by its key. A row inserted meanwhile has its blob already.
    for (const table of ['files', 'file_previews'] as const) {
      let after = ''
      for (;;) {
        const rows = await this.#storage.rowKeys(table, after, BATCH)
        if (rows.length === 0) break
        const stats = await Promise.all(rows.map((row) => this.#blobs.stat(row.key)))
        for (const [i, row] of rows.entries()) {
          if (stats[i] === undefined) note(report.missingBlobs, row.key)
        }
        after = (rows.at(-1) as { id: string }).id
      }
    }

    for await (const leftover of this.#blobs.leftovers()) {
      if (leftover.modifiedAt >= cutoff) {
        report.activeLeftovers++
        continue
      }
      note(report.staleLeftovers, leftover.id)
      report.staleLeftovers.bytes += leftover.size
      if (options.repair) {
        await this.#blobs.removeLeftover(leftover.id)
        report.staleLeftovers.removed++
      }
    }
    report.problems = report.missingBlobs.count
    return report
  }

  /** Runs a repairing check now and then every interval, logging each report; an interval of 0 runs none. */
  start(log: ReconcilerLog): void {
    if (this.#intervalMs === 0) return
    const checkAndLog = async () => {
      const report = await this.check({ repair: true })
      if (report.problems > 0) {
        log.error(
          { storage: report },
          `storage check: ${report.missingBlobs.count} rows whose blob is missing (not repaired; restore them from a backup)`,
        )
      } else {
        log.info({ storage: report }, 'storage check')
      }
    }
    this.#schedule = new Periodic(
      async () => {
        const ran = await this.#exclusively('storage-check', checkAndLog)
        if (!ran) log.info({}, 'storage check: another process is running it')
      },
      { intervalMs: this.#intervalMs, failure: 'storage check failed' },
    )
    this.#schedule.start(log)
  }

  async stop(): Promise<void> {
    await this.#schedule?.stop()
  }
}
