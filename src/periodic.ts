// The schedule of a background job: a run at start and one every `intervalMs`, never two at once in this process
// (a run still under way when the next falls due stands for it), each failure logged. `stop` ends the schedule and
// waits for the run under way, so nothing of the job runs after it.

export interface PeriodicLog {
  error(fields: { err: unknown }, message: string): void
}

export class Periodic {
  readonly #run: () => Promise<unknown>
  readonly #intervalMs: number
  /** What the log says failed: "sending email failed". */
  readonly #failure: string
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> | undefined

  constructor(run: () => Promise<unknown>, options: { intervalMs: number; failure: string }) {
    this.#run = run
    this.#intervalMs = options.intervalMs
    this.#failure = options.failure
  }

  start(log: PeriodicLog): void {
    const run = () => {
      this.#running ??= this.#run()
        .catch((error: unknown) => log.error({ err: error }, this.#failure))
        .finally(() => {
          this.#running = undefined
        })
    }
    run()
    this.#timer = setInterval(run, this.#intervalMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#running
  }
}
