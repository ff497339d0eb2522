// The schedule of a leased worker: work items (uploads to process, webhook deliveries) that every process of a
// fleet takes at once, each item held by one process with a lease in the database that it renews while working.
// A pass at start and every `intervalMs`, never two at once; before the first, a process that is the only one
// (the embedded mode, on SQLite) takes back every lease, since none can belong to a live process, rather than
// wait for those a crash left to run out. A pass logs its own faults and never rejects.
export interface LeasedWorkerLog {
  error(fields: { err: unknown }, message: string): void
}

export interface LeasedWorkerOptions {
  intervalMs: number
  /** Whether this process is the only one working on the items. */
  soleProcess: boolean
  /** Takes back every lease. */
  releaseLeases(): Promise<unknown>
  /** The items, as the log names them: "uploads". */
  what: string
}

export class LeasedWorker {
  readonly #pass: () => Promise<void>
  readonly #options: LeasedWorkerOptions
  #timer: NodeJS.Timeout | undefined
  #passing: Promise<void> | undefined
  #stopped = true

  constructor(pass: () => Promise<void>, options: LeasedWorkerOptions) {
    this.#pass = pass
    this.#options = options
  }

  start(log: LeasedWorkerLog): void {
    this.#stopped = false
    const { soleProcess, releaseLeases, what, intervalMs } = this.#options
    this.#passing = (soleProcess ? releaseLeases() : Promise.resolve())
      .catch((error: unknown) => log.error({ err: error }, `could not take back the leases of ${what}`))
      .then(() => this.#pass())
      .finally(() => {
        this.#passing = undefined
      })
    this.#timer = setInterval(() => void this.pass(), intervalMs)
    this.#timer.unref()
  }

  /** A pass now, unless one is under way (then that one); resolves when it ends. */
  pass(): Promise<void> {
    if (this.#stopped) return Promise.resolve()
    this.#passing ??= this.#pass().finally(() => {
      this.#passing = undefined
    })
    return this.#passing
  }

  /** Ends the schedule and waits for the pass under way; the worker's own items under way are its to wait for. */
  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#passing
  }
}
