// Background work that runs for as long as the server does (docs/architecture.md, "Wiring and background work"). A job is
// started once, with the log its faults go to, and stopped once: `stop` resolves when nothing of it runs any
// more, so that the database and the blob store can close after it. Each job runs on one of two schedules:
// `Periodic` (a run at start and every interval, optionally in one process of a fleet at a time) or
// `LeasedWorker` (every process at once, each taking items with a lease in the database).

export interface JobLog {
  error(details: object, message: string): void
  warn(details: object, message: string): void
  info(details: object, message: string): void
}

export interface Job {
  start(log: JobLog): void
  stop(): Promise<void>
}

/** Starts jobs in the order given and stops them in reverse. */
export class JobRunner {
  readonly #jobs: readonly Job[]

  /**
   * Order them so that a job comes after those it hands work to (the mail sender before what queues mail,
   * the digests job before upload processing): stopping in reverse then stops a job before the ones that
   * finish its work, and nothing is handed to a job that has stopped. Undefined: a job the configuration
   * leaves out (the mail sender without SMTP).
   */
  constructor(jobs: readonly (Job | undefined)[]) {
    this.#jobs = jobs.filter((job) => job !== undefined)
  }

  start(log: JobLog): void {
    for (const job of this.#jobs) job.start(log)
  }

  async stop(): Promise<void> {
    for (const job of [...this.#jobs].reverse()) await job.stop()
  }
}
