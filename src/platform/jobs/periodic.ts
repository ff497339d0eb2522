// The periodic schedule of a background job: a run at start and one every `intervalMs`, never two at once in this
// process (a run still under way when the next falls due stands for it), each failure logged. With `exclusive`, a
// run happens only in the process that holds the job's lock (Db.exclusively): one process of a fleet at a time,
// the others skipping their turn. `stop` ends the schedule and waits for the run under way, so nothing of the job
// runs after it.
import type { Exclusively } from '../db/database.ts'

export interface PeriodicLog {
  error(fields: { err: unknown }, message: string): void
}

export interface PeriodicOptions {
  intervalMs: number
  /** What the log says failed: "sending email failed". */
  failure: string
  /** Runs in one process at a time, under this lock. */
  exclusive?: { lock: string; exclusively: Exclusively }
}

export class Periodic {
  readonly #run: () => Promise<unknown>
  readonly #options: PeriodicOptions
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  /** Kicked while running: the run goes round once more. */
  #again = false
  #log: PeriodicLog | undefined

  constructor(run: () => Promise<unknown>, options: PeriodicOptions) {
    this.#run = run
    this.#options = options
  }

  start(log: PeriodicLog): void {
    this.#log = log
    this.kick()
    this.#timer = setInterval(() => this.#runUnlessRunning(), this.#options.intervalMs)
    this.#timer.unref()
  }

  /**
   * Runs now, out of turn (work was just recorded for the job); when a run is under way, once more right after
   * it, since that one may have looked before the work was recorded. Nothing once stopped.
   */
  kick(): void {
    if (!this.#log) return
    if (this.#running) this.#again = true
    else this.#runUnlessRunning()
  }

  async stop(): Promise<void> {
    this.#log = undefined
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#running
  }

  #runUnlessRunning(): void {
    const log = this.#log
    if (!log || this.#running) return
    const { exclusive, failure } = this.#options
    const run = exclusive
      ? exclusive.exclusively(exclusive.lock, async () => {
          await this.#run()
        })
      : this.#run()
    this.#running = run
      .then(
        () => {},
        (error: unknown) => log.error({ err: error }, failure),
      )
      .finally(() => {
        this.#running = undefined
        if (this.#again) {
          this.#again = false
          this.kick()
        }
      })
  }
}
