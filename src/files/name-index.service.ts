// The name index's background job (name-index.repository.ts).
import type { Db, Exclusively } from '../db/database.ts'
import { NameIndex } from './name-index.repository.ts'

/**
 * Chunks written in one transaction: after migration 0021 there may be thousands to write, and each gram's rows
 * written side by side cost less; few enough that SQLite's one writer is not held long (0.2 s here).
 */
const CHUNKS_AT_ONCE = 4

/**
 * Adds to the name index the chunks of files that searches still read one by one: at start (all of them after
 * migration 0021, or those left when a process stopped before writing a chunk its upload filled), then every
 * minute, in one process at a time; and writes again the blocks that deletions and renames left many stale
 * slots in.
 */
export class NameIndexJob {
  readonly #index: NameIndex
  readonly #exclusively: Exclusively
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> | undefined

  constructor(db: Db, exclusively: Exclusively) {
    this.#index = new NameIndex(db)
    this.#exclusively = exclusively
  }

  start(log: JobLog): void {
    const run = () => {
      this.#running ??= this.#exclusively('name-index', async () => {
        await this.#index.foldAll(CHUNKS_AT_ONCE)
        await this.#index.rewriteStale()
      })
        .catch((error: unknown) => log.error({ err: error }, 'writing the name index failed'))
        .finally(() => {
          this.#running = undefined
        })
    }
    run()
    this.#timer = setInterval(run, 60_000)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
  }
}

interface JobLog {
  error(fields: { err: unknown }, message: string): void
}
