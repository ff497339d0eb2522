// Rate-limit buckets shared by every Coffer process through Redis (REDIS_URL). One Lua script runs the GCRA
// step of rate-limit-store.ts atomically on the server, with the server's clock, so processes whose clocks
// disagree still share one limit. Keys are namespaced and expire once their bucket has refilled.
//
// Redis is a dependency for fairness, not for serving: when it is unreachable, slow or failing, requests
// are never refused or delayed on its account. Each process falls back to its own in-memory buckets (the
// limit then applies per process) and returns to Redis once it is reachable again.
import type { FastifyBaseLogger } from 'fastify'
import { Redis } from 'ioredis'
import {
  type Gcra,
  gcraOf,
  MemoryRateLimitStore,
  type RateLimitDecision,
  type RateLimitPolicy,
  type RateLimitStore,
} from './rate-limit-store.ts'

export const REDIS_KEY_PREFIX = 'coffer:rl:'

/** A down Redis must not hold up startup; ioredis keeps reconnecting in the background. */
const CONNECT_TIMEOUT_MS = 2000
/** A slow Redis must not hold up requests: past this, the request is decided locally. */
const COMMAND_TIMEOUT_MS = 500
/** After a failure, decide locally for this long instead of paying the timeout on every request. */
const PAUSE_AFTER_FAILURE_MS = 5000
const WARNING_INTERVAL_MS = 60_000

// KEYS[1]: the bucket. ARGV: interval and capacity in microseconds (see gcraOf), and the cost in units of the
// limit (negative: a refund). Returns { allowed (0/1), remaining, resetUs, retryAfterUs }, exactly as gcraStep
// does.
const GCRA_LUA = `
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
local debt = math.max(tat - now, 0)
local nextDebt = math.max(debt + interval * cost, 0)
if nextDebt > capacity then
  return { 0, 0, debt, nextDebt - capacity }
end
if nextDebt == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.0f', now + nextDebt), 'PX', math.ceil(nextDebt / 1000))
end
return { 1, math.floor((capacity - nextDebt) / interval), nextDebt, 0 }
`

declare module 'ioredis' {
  interface RedisCommander<Context> {
    cofferRateLimit(bucket: string, intervalUs: number, capacityUs: number, cost: number): Promise<number[]>
  }
}

/**
 * One connection to Redis for every limit of a process, with the fallback state they share: when Redis
 * fails, every limit decides locally for a while, and the failure is logged once per interval, not once per
 * limit.
 */
export class RedisRateLimits {
  readonly #redis: Redis
  readonly #log: FastifyBaseLogger
  #pausedUntil = 0
  #lastWarningAt = Number.NEGATIVE_INFINITY
  readonly #stores: RedisRateLimitStore[] = []

  private constructor(redis: Redis, log: FastifyBaseLogger) {
    this.#redis = redis
    this.#log = log
  }

  /** Connects, waiting at most CONNECT_TIMEOUT_MS; never throws for an unreachable Redis. */
  static async open(url: string, log: FastifyBaseLogger): Promise<RedisRateLimits> {
    const redis = new Redis(url, {
      lazyConnect: true,
      // Without a connection, fail at once and decide locally rather than queue the request behind it.
      enableOfflineQueue: false,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    })
    redis.defineCommand('cofferRateLimit', { numberOfKeys: 1, lua: GCRA_LUA })
    const limits = new RedisRateLimits(redis, log)
    redis.on('error', (error: Error) => limits.#warn(error))
    await redis.connect().catch((error: Error) => limits.#warn(error))
    return limits
  }

  /** The buckets of one policy; bucket names must be unique across policies. */
  store(policy: RateLimitPolicy): RedisRateLimitStore {
    const store = new RedisRateLimitStore(this, policy)
    this.#stores.push(store)
    return store
  }

  /** One GCRA step in Redis; undefined when Redis cannot answer now (the caller decides locally). */
  async step(bucket: string, gcra: Gcra, cost: number): Promise<RateLimitDecision | undefined> {
    if (this.#redis.status !== 'ready' || Date.now() < this.#pausedUntil) return undefined
    try {
      const [allowed, remaining, resetUs, retryAfterUs] = await this.#redis.cofferRateLimit(
        REDIS_KEY_PREFIX + bucket,
        gcra.intervalUs,
        gcra.capacityUs,
        cost,
      )
      return {
        allowed: allowed === 1,
        remaining: Number(remaining),
        resetUs: Number(resetUs),
        retryAfterUs: Number(retryAfterUs),
      }
    } catch (error) {
      this.#pausedUntil = Date.now() + PAUSE_AFTER_FAILURE_MS
      this.#warn(error as Error)
      return undefined
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#stores.map((store) => store.closeLocal()))
    if (this.#redis.status === 'ready') {
      await this.#redis.quit().catch(() => this.#redis.disconnect())
    } else {
      // Also stops the reconnection attempts, which would otherwise keep the process alive.
      this.#redis.disconnect()
    }
  }

  #warn(error: Error): void {
    const now = Date.now()
    if (now - this.#lastWarningAt < WARNING_INTERVAL_MS) return
    this.#lastWarningAt = now
    // Only the message: the error object can carry the connection options, password included.
    this.#log.warn(
      { redisError: error.message },
      'Redis is unavailable for rate limiting; each process limits on its own until it is back',
    )
  }
}

/** The buckets of one policy, in Redis through a shared RedisRateLimits, in this process while it fails. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #limits: RedisRateLimits
  readonly #gcra: Gcra
  readonly #local: MemoryRateLimitStore

  constructor(limits: RedisRateLimits, policy: RateLimitPolicy) {
    this.#limits = limits
    this.#gcra = gcraOf(policy)
    this.#local = new MemoryRateLimitStore(policy)
  }

  async hit(bucket: string, cost = 1): Promise<RateLimitDecision> {
    return (await this.#limits.step(bucket, this.#gcra, cost)) ?? this.#local.hit(bucket, cost)
  }

  async refund(bucket: string): Promise<void> {
    if (!(await this.#limits.step(bucket, this.#gcra, -1))) await this.#local.refund(bucket)
  }

  /** Closing is the shared connection's business (RedisRateLimits.close). */
  async close(): Promise<void> {}

  closeLocal(): Promise<void> {
    return this.#local.close()
  }
}
