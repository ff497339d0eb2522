// Every ten minutes, the rows whose time is up: each purge is handed over by what it removes (wiring.ts names
// them: sessions, setup links, OAuth records, download passes' budgets, failed sign-ins older than the password
// page shows, webhook events and emails past their retention, files whose time in the trash is over). They run one after the other, in one process at a
// time: a background chore takes one of the pool's connections, never all of them.
import type { Exclusively } from '../db/database.ts'
import { Periodic, type PeriodicLog } from './periodic.ts'

const PURGE_INTERVAL_MS = 10 * 60_000

/** A purge, given the log its faults that do not stop it go to (a blob that could not be removed yet). */
type Purge = (log: PeriodicLog) => Promise<unknown>

export class ExpiredRecordsPurge {
  readonly #purges: Record<string, Purge>
  readonly #schedule: Periodic
  #log: PeriodicLog | undefined

  constructor(purges: Record<string, Purge>, exclusively: Exclusively) {
    this.#purges = purges
    this.#schedule = new Periodic(() => this.#purgeAll(), {
      intervalMs: PURGE_INTERVAL_MS,
      failure: 'removing expired records failed',
      exclusive: { lock: 'expired-records', exclusively },
    })
  }

  start(log: PeriodicLog): void {
    this.#log = log
    this.#schedule.start(log)
  }

  stop(): Promise<void> {
    return this.#schedule.stop()
  }

  /** Every purge, each failure logged apart so that one failing holds up none of the others. */
  async #purgeAll(): Promise<void> {
    const log = this.#log
    if (!log) return
    for (const [what, purge] of Object.entries(this.#purges)) {
      await purge(log).catch((error: unknown) => log.error({ err: error }, `removing expired ${what} failed`))
    }
  }
}
