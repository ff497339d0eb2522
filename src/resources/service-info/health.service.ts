// Readiness: whether this process can serve requests now, i.e. whether it is not shutting down, the database
// answers and the blob store accepts a write. Load balancers poll it; liveness (/healthz) deliberately checks nothing.

import { probeKey } from '../../platform/blob/blob-keys.ts'
import type { BlobStore } from '../../platform/blob/blob-store.ts'

/** A dependency that hangs is as unavailable as one that fails; a probe must answer before the poller gives up. */
const CHECK_TIMEOUT_MS = 3000

export type CheckName = 'database' | 'blobStore'

export interface Readiness {
  ready: boolean
  /** The process is shutting down (SIGTERM): no new work should come to it. */
  draining: boolean
  checks: Record<CheckName, 'ok' | 'failed'>
  /** Why each failed check failed, for the log only: it may name hosts or paths. */
  failures: Partial<Record<CheckName, string>>
}

async function withTimeout<T>(work: () => Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)),
      CHECK_TIMEOUT_MS,
    )
  })
  try {
    return await Promise.race([work(), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Probes whose removal failed that a process remembers, to remove at its next probes; the storage check takes the rest. */
const UNREMOVED_PROBES_MAX = 100

export class HealthService {
  readonly #pingDatabase: () => Promise<void>
  readonly #blobs: BlobStore
  /** Keys of probes written whose removal failed (the store went down in between): removed by later probes. */
  readonly #unremovedProbes = new Set<string>()
  #draining = false

  constructor(deps: { pingDatabase: () => Promise<void>; blobs: BlobStore }) {
    this.#pingDatabase = deps.pingDatabase
    this.#blobs = deps.blobs
  }

  /** From now on the process is not ready: a load balancer stops sending it requests (server.ts, shutdown). */
  drain(): void {
    this.#draining = true
  }

  async readiness(): Promise<Readiness> {
    if (this.#draining) {
      return { ready: false, draining: true, checks: { database: 'ok', blobStore: 'ok' }, failures: {} }
    }
    const probes: Record<CheckName, () => Promise<unknown>> = {
      database: () => this.#pingDatabase(),
      // A write, not a stat: a full disk, a read-only mount or revoked bucket credentials stop uploads while
      // reads still work. Each probe uses its own key so concurrent polls do not delete each other's.
      blobStore: async () => {
        const key = probeKey()
        await this.#blobs.put(key, Buffer.from('ok'))
        this.#unremovedProbes.add(key)
        // Past the bound, the oldest are left to the storage check.
        for (const old of this.#unremovedProbes) {
          if (this.#unremovedProbes.size <= UNREMOVED_PROBES_MAX) break
          this.#unremovedProbes.delete(old)
        }
        for (const left of [...this.#unremovedProbes]) {
          await this.#blobs.delete(left)
          this.#unremovedProbes.delete(left)
        }
      },
    }
    const names = Object.keys(probes) as CheckName[]
    const results = await Promise.allSettled(names.map((name) => withTimeout(probes[name], name)))
    const readiness: Readiness = {
      ready: true,
      draining: false,
      checks: { database: 'ok', blobStore: 'ok' },
      failures: {},
    }
    results.forEach((result, i) => {
      const name = names[i] as CheckName
      if (result.status === 'rejected') {
        readiness.ready = false
        readiness.checks[name] = 'failed'
        readiness.failures[name] =
          result.reason instanceof Error ? result.reason.message : String(result.reason)
      }
    })
    return readiness
  }
}
