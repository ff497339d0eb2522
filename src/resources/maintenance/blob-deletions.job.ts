// Removing the blobs of deleted rows, crash-safe: a deletion records its blobs in the transaction that
// removes the rows (`record`), removes them once it has committed (`complete`), and whatever a crash or a
// failing disk left recorded is removed by the sweep, at start and every SWEEP_INTERVAL_MS. A blob stays
// recorded until it is removed, so none is ever forgotten; removing one that is already gone is no error.
// While a backup runs (storage/backups.ts), nothing is removed: the sweep after it does the removing.

import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Exclusively, Transaction } from '../../platform/db/database.ts'
import { Periodic } from '../../platform/jobs/periodic.ts'
import type { BlobDeletionsRepository } from './blob-deletions.repository.ts'

export const SWEEP_INTERVAL_MS = 30_000
const SWEEP_BATCH = 500

export interface DeletionLog {
  error(details: object, message: string): void
  info(details: object, message: string): void
}

export class BlobDeletionsService {
  readonly #deletions: BlobDeletionsRepository
  readonly #blobs: BlobStore
  readonly #schedule: Periodic
  #sweeping: Promise<number> | undefined
  #log: DeletionLog | undefined

  /** `exclusively`: the sweeps of the job run in one process at a time (Db.exclusively). */
  constructor(deps: { deletions: BlobDeletionsRepository; blobs: BlobStore; exclusively: Exclusively }) {
    this.#deletions = deps.deletions
    this.#blobs = deps.blobs
    this.#schedule = new Periodic(() => this.sweep(), {
      intervalMs: SWEEP_INTERVAL_MS,
      failure: 'the sweep of blob deletions failed',
      exclusive: { lock: 'blob-deletions', exclusively: deps.exclusively },
    })
  }

  /** Records blobs to remove, in the transaction that removes the rows that own them. */
  record(trx: Transaction, keys: string[]): Promise<void> {
    return this.#deletions.record(trx, keys)
  }

  /**
   * Removes recorded blobs, after the commit that recorded them, and forgets those removed. One that cannot
   * be removed is logged and stays recorded for the sweep; this never throws for it.
   */
  async complete(keys: string[], log: Pick<DeletionLog, 'error'>): Promise<number> {
    // A backup under way may still copy these blobs for rows it has; the sweep after it removes them.
    if (keys.length === 0 || (await this.#deletions.held(Date.now()))) return 0
    const removed: string[] = []
    await Promise.all(
      keys.map(async (key) => {
        try {
          await this.#blobs.delete(key)
          removed.push(key)
        } catch (err) {
          log.error({ err, blobKey: key }, 'could not remove the blob of a deleted row; the sweep will retry')
        }
      }),
    )
    await this.#deletions.forget(removed)
    return removed.length
  }

  /** Removes what earlier deletions left recorded; resolves with how many blobs it removed. */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#sweepOnce().finally(() => {
      this.#sweeping = undefined
    })
    return this.#sweeping
  }

  async #sweepOnce(): Promise<number> {
    const log = this.#log ?? { error: () => {}, info: () => {} }
    let removed = 0
    try {
      for (;;) {
        const keys = await this.#deletions.pending(Date.now(), SWEEP_BATCH)
        if (keys.length === 0) break
        const done = await this.complete(keys, log)
        removed += done
        // Every one failed: the store is down; the next sweep tries again.
        if (done === 0) break
      }
      if (removed > 0) log.info({ removed }, 'removed the blobs of rows deleted earlier')
    } catch (err) {
      log.error({ err }, 'the sweep of blob deletions failed')
    }
    return removed
  }

  /** Sweeps now (what a crash left), then every SWEEP_INTERVAL_MS, unless another process is sweeping. */
  start(log: DeletionLog): void {
    this.#log = log
    this.#schedule.start(log)
  }

  async stop(): Promise<void> {
    await this.#schedule.stop()
    await this.#sweeping
  }
}
