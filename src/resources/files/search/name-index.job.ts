// The name index's background job (name-index.repository.ts).
import type { Db, Exclusively } from '../../../platform/db/database.ts'
import { Periodic, type PeriodicLog } from '../../../platform/jobs/periodic.ts'
import { NameIndex } from './name-index.repository.ts'

/**
 * Chunks written in one transaction: after migrations 0021 and 0026 there may be thousands to write, and each
 * gram's rows written side by side cost less; few enough that SQLite's one writer is not held long (0.2 s here).
 */
const CHUNKS_AT_ONCE = 4

/**
 * Adds to the name index the chunks of files that searches still read one by one: at start (all of them after
 * migrations 0021 and 0026, or those left when a process stopped before writing a chunk its upload filled), then
 * every minute, in one process at a time; and writes again the blocks that deletions and renames left many stale
 * slots in.
 */
export class NameIndexJob {
  readonly #index: NameIndex
  readonly #exclusively: Exclusively
  readonly #schedule = new Periodic(
    () =>
      this.#exclusively('name-index', async () => {
        await this.#index.foldAll(CHUNKS_AT_ONCE)
        await this.#index.rewriteStale()
      }),
    { intervalMs: 60_000, failure: 'writing the name index failed' },
  )

  constructor(db: Db, exclusively: Exclusively) {
    this.#index = new NameIndex(db)
    this.#exclusively = exclusively
  }

  start(log: PeriodicLog): void {
    this.#schedule.start(log)
  }

  stop(): Promise<void> {
    return this.#schedule.stop()
  }
}
