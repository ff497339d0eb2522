// Rate limiting of every request but the health checks. It runs after authentication has identified the
// credential and before authorization refuses anything, so a client over its limit gets a 429 even when its
// credential is bad: guessing keys is throttled like any other traffic.
//
// Buckets: one per credential (its id, never its secret) when the request carries a valid one; otherwise
// one per client address, an IPv6 client's whole /64 counting as one address. The limit is
// RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_SECONDS, refilled smoothly (see rate-limit-store.ts), in
// this process's memory or, with REDIS_URL, shared by every process through Redis.
import { isIPv6 } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.ts'
import { AppError } from '../errors.ts'
import { clientAddress } from './client-address.ts'
import { RedisRateLimits } from './rate-limit-redis.ts'
import { MemoryRateLimitStore, type RateLimitPolicy, type RateLimitStore } from './rate-limit-store.ts'

/** Load balancers and orchestrators poll these; throttling them would take a healthy instance out. */
const EXEMPT_PATHS = new Set(['/healthz', '/readyz'])

/** The policy as the capability index and the docs state it. */
export function rateLimitPolicy(config: Config): { limit: number; windowSeconds: number } {
  return { limit: config.rateLimit.max, windowSeconds: config.rateLimit.windowMs / 1000 }
}

/**
 * The bucket of a client address. An IPv6 client is usually given a whole /64, so counting its addresses
 * one by one would let it step around the limit; an IPv4-mapped IPv6 address is its IPv4 address.
 */
export function addressBucket(ip: string): string {
  if (!isIPv6(ip)) return `ip:${ip}`
  const address = ip.toLowerCase().replace(/%.*$/, '')
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address)
  if (mapped) return `ip:${mapped[1]}`
  const [head = '', tail] = address.split('::')
  const headGroups = head ? head.split(':') : []
  const tailGroups = tail ? tail.split(':') : []
  // A trailing dotted IPv4 part stands for two groups.
  const tailSize = tailGroups.reduce((size, group) => size + (group.includes('.') ? 2 : 1), 0)
  const groups = [...headGroups, ...Array<string>(8 - headGroups.length - tailSize).fill('0'), ...tailGroups]
  const prefix = groups.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16))
  return `ip:${prefix.join(':')}::/64`
}

export function credentialBucket(credentialId: string): string {
  return `cred:${credentialId}`
}

function bucketOf(request: FastifyRequest): { bucket: string; who: string } {
  const principal = request.principal
  return principal
    ? { bucket: credentialBucket(principal.credentialId), who: 'this credential' }
    : { bucket: addressBucket(clientAddress(request)), who: 'this client address' }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `false` exempts a route: the blob endpoint, each of whose requests carries a signed, short-lived token
     * bound to one upload.
     */
    rateLimit?: false
  }
}

/** Whether requests to a route go uncounted: health checks, and routes configured `rateLimit: false`. */
export function isExemptRoute(route: { url: string; config?: { rateLimit?: false } }): boolean {
  if (route.config?.rateLimit === false) return true
  return EXEMPT_PATHS.has(route.url.length > 1 ? route.url.replace(/\/+$/, '') : route.url)
}

const seconds = (us: number) => Math.ceil(us / 1_000_000)

export type RateLimiter = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

/** Whole seconds, rounded up, of a wait in microseconds; at least 1. */
export const retryAfterSeconds = (us: number) => Math.max(1, Math.ceil(us / 1_000_000))

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * A store of buckets under a policy of its own (password guesses, say), in Redis when REDIS_URL is set,
     * through the one connection every limit shares, and in this process otherwise. Its bucket names must
     * not clash with the request limit's (`ip:…`, `cred:…`).
     */
    rateLimitStore(policy: RateLimitPolicy): RateLimitStore
  }
}

/** The stores of every limit: one per policy, each holding its own buckets. */
export type RateLimitStores = (policy: RateLimitPolicy) => RateLimitStore

/**
 * Opens the stores of every limit (through one Redis connection when REDIS_URL is set, in this process
 * otherwise), gives the app `rateLimitStore`, and closes them when the app closes. Called before the services
 * are built, so that those whose rules count attempts (sign-in, a share link's password) are handed the same
 * stores as the request limit; `createRateLimiter` needs it to have run.
 */
export async function registerRateLimitStores(
  app: FastifyInstance,
  config: Config,
): Promise<RateLimitStores> {
  const redis = config.redisUrl ? await RedisRateLimits.open(config.redisUrl, app.log) : undefined
  const local: MemoryRateLimitStore[] = []
  const stores: RateLimitStores = (policy) => {
    if (redis) return redis.store(policy)
    const store = new MemoryRateLimitStore(policy)
    local.push(store)
    return store
  }
  app.decorate('rateLimitStore', stores)
  app.addHook('onClose', async () => {
    await redis?.close()
    await Promise.all(local.map((store) => store.close()))
  })
  return stores
}

/**
 * Counts a request against its bucket, sets the rate-limit headers and refuses it (429) past the limit. Its
 * store comes from `registerRateLimitStores`, which must have run.
 */
export async function createRateLimiter(app: FastifyInstance, config: Config): Promise<RateLimiter> {
  if (!app.hasDecorator('rateLimitStore')) {
    throw new Error('registerRateLimitStores must run before the rate limiter is created')
  }
  const policy = { limit: config.rateLimit.max, windowMs: config.rateLimit.windowMs }
  const store = app.rateLimitStore(policy)

  const windowSeconds = policy.windowMs / 1000
  return async (request, reply) => {
    const { bucket, who } = bucketOf(request)
    const decision = await store.hit(bucket)
    reply.header('ratelimit-limit', policy.limit)
    reply.header('ratelimit-remaining', decision.remaining)
    reply.header('ratelimit-reset', seconds(decision.resetUs))
    if (decision.allowed) return
    const retryAfter = retryAfterSeconds(decision.retryAfterUs)
    reply.header('retry-after', retryAfter)
    throw new AppError(
      'rate_limited',
      `Too many requests for ${who}: the limit is ${policy.limit} requests per ${windowSeconds} seconds; ` +
        `retry in ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`,
    )
  }
}
