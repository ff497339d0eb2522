// The rate-limit algorithm, GCRA (generic cell rate algorithm), and its in-memory store. GCRA keeps one
// number per bucket, the "theoretical arrival time" (TAT): the moment the bucket would be empty again if no
// more requests came. It allows a burst of the whole limit, then refills one request every window/limit, so
// there is no window edge where twice the limit gets through (a fixed window's weakness). The Redis store
// runs the same steps in Lua; both work in whole microseconds so that the two agree to the unit.

export interface RateLimitPolicy {
  /** Requests allowed per window, all of them at once if the bucket is full. */
  limit: number
  windowMs: number
}

export interface RateLimitDecision {
  allowed: boolean
  /** Requests still allowed right now. */
  remaining: number
  /** Microseconds until the whole limit is available again. */
  resetUs: number
  /** Microseconds until one more request is allowed (0 when this one was). */
  retryAfterUs: number
}

export interface RateLimitStore {
  /**
   * Counts one request against `bucket`, or `cost` units of the limit for a request that takes several at
   * once (a preparation of many files), and says whether it may proceed: all of it or none. Never rejects.
   */
  hit(bucket: string, cost?: number): Promise<RateLimitDecision>
  /**
   * Gives back one unit a hit took: for limits that count only failures (sign-in), whose attempts each take a
   * unit before the password is checked, so that attempts at the same time cannot overrun the limit, and give
   * it back when they succeed. Never rejects.
   */
  refund(bucket: string): Promise<void>
  close(): Promise<void>
}

export interface Gcra {
  /** Microseconds one request occupies. */
  intervalUs: number
  /** How far ahead of now the TAT may run: exactly `limit` intervals, so a full burst is `limit`. */
  capacityUs: number
}

export function gcraOf(policy: RateLimitPolicy): Gcra {
  // Whole microseconds keep the arithmetic exact (in JS and in Redis's Lua doubles alike). Rounding the
  // interval down refills at most a microsecond per request early; the burst stays exactly `limit`.
  const intervalUs = Math.max(1, Math.floor((policy.windowMs * 1000) / policy.limit))
  return { intervalUs, capacityUs: intervalUs * policy.limit }
}

/**
 * One GCRA step of `cost` units from the bucket's debt (TAT minus now, never negative); `nextDebtUs` is set
 * when allowed. A cost above the limit is never allowed; a negative cost gives units back (a refund).
 */
export function gcraStep(gcra: Gcra, debtUs: number, cost = 1): RateLimitDecision & { nextDebtUs?: number } {
  const nextDebtUs = Math.max(debtUs + gcra.intervalUs * cost, 0)
  if (nextDebtUs > gcra.capacityUs) {
    return { allowed: false, remaining: 0, resetUs: debtUs, retryAfterUs: nextDebtUs - gcra.capacityUs }
  }
  return {
    allowed: true,
    remaining: Math.floor((gcra.capacityUs - nextDebtUs) / gcra.intervalUs),
    resetUs: nextDebtUs,
    retryAfterUs: 0,
    nextDebtUs,
  }
}

/** Buckets of one process. Memory stays bounded by the buckets active within one window. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #gcra: Gcra
  /** Bucket → TAT in epoch microseconds. A TAT in the past is the same as no entry: a full bucket. */
  readonly #tats = new Map<string, number>()
  readonly #pruner: NodeJS.Timeout

  constructor(policy: RateLimitPolicy) {
    this.#gcra = gcraOf(policy)
    this.#pruner = setInterval(() => this.#prune(), Math.min(policy.windowMs, 60_000))
    this.#pruner.unref()
  }

  async hit(bucket: string, cost = 1): Promise<RateLimitDecision> {
    return this.#step(bucket, cost)
  }

  async refund(bucket: string): Promise<void> {
    this.#step(bucket, -1)
  }

  #step(bucket: string, cost: number): RateLimitDecision {
    const now = Date.now() * 1000
    const tat = this.#tats.get(bucket) ?? now
    const { nextDebtUs, ...decision } = gcraStep(this.#gcra, Math.max(tat - now, 0), cost)
    if (nextDebtUs === 0) this.#tats.delete(bucket)
    else if (nextDebtUs !== undefined) this.#tats.set(bucket, now + nextDebtUs)
    return decision
  }

  /** Drops buckets that have refilled completely. */
  #prune(): void {
    const now = Date.now() * 1000
    for (const [bucket, tat] of this.#tats) if (tat <= now) this.#tats.delete(bucket)
  }

  /** Buckets held, for tests of the pruning. */
  get size(): number {
    return this.#tats.size
  }

  async close(): Promise<void> {
    clearInterval(this.#pruner)
  }
}
