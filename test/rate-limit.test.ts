// Rate limiting, in memory and in Redis. The limiter sits in front of the metadata engine and keeps no state
// in it, so these tests run on SQLite only: PostgreSQL would add nothing but time (they wait out windows).
// The same behavioural suite runs against both stores, which must agree exactly; the Redis suite adds what
// only Redis has (a limit shared by processes, and its failures) and runs against the machine's real Redis.
import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { type App, buildApp } from '../src/app.ts'
import { ERROR_CODES } from '../src/platform/errors.ts'
import { addressBucket, credentialBucket, rateLimitPolicy } from '../src/platform/http/rate-limit.ts'
import { REDIS_KEY_PREFIX } from '../src/platform/http/rate-limit-redis.ts'
import { MemoryRateLimitStore } from '../src/platform/http/rate-limit-store.ts'
import {
  assertErrorEnvelope,
  captureLogs,
  createAccount,
  startApp,
  type TestContext,
} from './support/harness.ts'
import { checkResponseAgainstOpenApi } from './support/openapi-check.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const LIMITS = { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_SECONDS: '60' }

/** Why Redis cannot be used, or undefined when it answers. */
async function redisProblem(): Promise<string | undefined> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, retryStrategy: () => null })
  probe.on('error', () => {})
  try {
    await probe.connect()
    await probe.ping()
    return undefined
  } catch (error) {
    return `Redis is not reachable at ${REDIS_URL} (${(error as Error).message})`
  } finally {
    probe.disconnect()
  }
}
const redisSkip = await redisProblem()
if (redisSkip) console.log(`# skipping the Redis rate-limit tests: ${redisSkip}`)

const randomIpv4 = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

interface Sent {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: any
}

/** One request from a chosen address; every response is checked like the harness's `call` does. */
async function send(
  app: App,
  options: {
    token?: string
    ip?: string
    method?: string
    url?: string
    authorization?: string
    body?: unknown
  },
): Promise<Sent> {
  const method = options.method ?? 'GET'
  const url = options.url ?? '/api/v1/folders'
  const headers: Record<string, string> = {}
  const authorization = options.authorization ?? (options.token && `Bearer ${options.token}`)
  if (authorization) headers.authorization = authorization
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const raw = await app.inject({
    method: method as 'GET',
    url,
    headers,
    remoteAddress: options.ip ?? '127.0.0.1',
    payload: options.body === undefined ? undefined : JSON.stringify(options.body),
  })
  const isJson = String(raw.headers['content-type'] ?? '').startsWith('application/json')
  const body = isJson && raw.body ? JSON.parse(raw.body) : raw.body
  if (raw.statusCode >= 400) assertErrorEnvelope(body, `${method} ${url}`)
  if (isJson) await checkResponseAgainstOpenApi(app, method, url, raw.statusCode, body)
  return { status: raw.statusCode, headers: raw.headers, body }
}

/** Sends the same request six times: with a limit of 5, the statuses and remaining counts of a bucket's fill. */
async function sixInARow(app: App, options: Parameters<typeof send>[1]): Promise<[number, unknown][]> {
  const seen: [number, unknown][] = []
  for (let i = 0; i < 6; i++) {
    const res = await send(app, options)
    seen.push([res.status, res.headers['ratelimit-remaining']])
  }
  return seen
}

/** What `sixInARow` sees of an empty bucket: five answers with `status`, then a 429. */
const fiveThenLimited = (status: number) => [
  [status, '4'],
  [status, '3'],
  [status, '2'],
  [status, '1'],
  [status, '0'],
  [429, '0'],
]

const rateHeaders = (res: Sent) => ({
  limit: res.headers['ratelimit-limit'],
  remaining: res.headers['ratelimit-remaining'],
  reset: res.headers['ratelimit-reset'],
  retryAfter: res.headers['retry-after'],
})

function assertLimited(res: Sent, who: string, retryAfter: number): void {
  assert.equal(res.status, 429, JSON.stringify(res.body))
  const s = retryAfter === 1 ? '' : 's'
  assert.deepEqual(res.body, {
    error: {
      code: 'rate_limited',
      message: `Too many requests for ${who}: the limit is 5 requests per 60 seconds; retry in ${retryAfter} second${s}.`,
      hint: ERROR_CODES.rate_limited.hint,
    },
  })
}

/** The credential id behind an API key secret, to name its bucket. */
async function credentialOf(app: App, token: string): Promise<string> {
  const principal = await app.services.apiKeys.authenticate(token)
  assert.ok(principal)
  return principal.credentialId
}

test('the capability index states the limit and the window', async () => {
  const ctx = await startApp('sqlite', { env: { RATE_LIMIT_MAX: '42', RATE_LIMIT_WINDOW_SECONDS: '90' } })
  try {
    assert.deepEqual(rateLimitPolicy(ctx.config), { limit: 42, windowSeconds: 90 })
  } finally {
    await ctx.stop()
  }
})

test('addresses map to buckets: IPv4 as is, IPv4-mapped as IPv4, IPv6 by its /64', () => {
  assert.equal(addressBucket('10.1.2.3'), 'ip:10.1.2.3')
  assert.equal(addressBucket('::ffff:10.1.2.3'), 'ip:10.1.2.3')
  assert.equal(addressBucket('2001:DB8:a:b:1:2:3:4'), 'ip:2001:db8:a:b::/64')
  assert.equal(addressBucket('2001:db8:0a:0b::9'), 'ip:2001:db8:a:b::/64')
  assert.equal(addressBucket('2001:db8::1:2:3:4:5'), 'ip:2001:db8:0:1::/64')
  assert.equal(addressBucket('fe80::1%eth0'), 'ip:fe80:0:0:0::/64')
  assert.equal(addressBucket('::1'), 'ip:0:0:0:0::/64')
  assert.equal(credentialBucket('key_123'), 'cred:key_123')
})

test('the in-memory store forgets buckets once they have refilled', async () => {
  // 10 per 100 ms: one request occupies a bucket for 10 ms, ten of them for 100 ms.
  const store = new MemoryRateLimitStore({ limit: 10, windowMs: 100 })
  try {
    for (let i = 0; i < 500; i++) assert.equal((await store.hit(`ip:${i}`)).allowed, true)
    assert.equal(store.size, 500)
    await sleep(250)
    assert.equal(store.size, 0)
  } finally {
    await store.close()
  }
})

for (const mode of ['memory', 'redis'] as const) {
  describe(`rate limiting [${mode}]`, { skip: mode === 'redis' && redisSkip }, () => {
    const modeEnv: Record<string, string> = mode === 'redis' ? { REDIS_URL } : {}
    let ctx: TestContext & { stop(): Promise<void> }
    let redis: Redis | undefined
    /** Buckets this suite made in the shared Redis, deleted at the end: never anyone else's. */
    const buckets = new Set<string>()
    const fromIp = (ip: string) => {
      buckets.add(addressBucket(ip))
      return ip
    }
    const account = async (app: App) => {
      const a = await createAccount(app)
      buckets.add(credentialBucket(await credentialOf(app, a.token)))
      return {
        ...a,
        key: async (scopes: Parameters<typeof a.key>[0]) => {
          const token = await a.key(scopes)
          buckets.add(credentialBucket(await credentialOf(app, token)))
          return token
        },
      }
    }

    before(async () => {
      ctx = await startApp('sqlite', { env: { ...LIMITS, ...modeEnv } })
      if (mode === 'redis') redis = new Redis(REDIS_URL)
    })
    after(async () => {
      await ctx.stop()
      if (redis) {
        if (buckets.size > 0) await redis.del(...[...buckets].map((bucket) => REDIS_KEY_PREFIX + bucket))
        await redis.quit()
      }
    })

    test('a refund gives back one unit a hit took (the sign-in limits keep only failures)', async () => {
      const store = ctx.app.rateLimitStore({ limit: 3, windowMs: 60_000 })
      const bucket = `refund-test-${randomBytes(6).toString('hex')}`
      buckets.add(bucket)
      for (let i = 0; i < 3; i++) assert.equal((await store.hit(bucket)).allowed, true)
      const blocked = await store.hit(bucket)
      assert.equal(blocked.allowed, false)
      assert.ok(blocked.retryAfterUs > 0 && blocked.retryAfterUs <= 20_000_000)
      await store.refund(bucket)
      const again = await store.hit(bucket)
      assert.equal(again.allowed, true)
      assert.equal(again.remaining, 0)
      assert.equal((await store.hit(bucket)).allowed, false)
      // Refunds never give more than a full bucket: three of them leave exactly three units.
      for (let i = 0; i < 5; i++) await store.refund(bucket)
      for (let i = 0; i < 3; i++) assert.equal((await store.hit(bucket)).allowed, true)
      assert.equal((await store.hit(bucket)).allowed, false)
    })

    test('a hit may cost several units: all of it is taken, or none (preparations count their files)', async () => {
      const store = ctx.app.rateLimitStore({ limit: 10, windowMs: 60_000 })
      const bucket = `cost-test-${randomBytes(6).toString('hex')}`
      buckets.add(bucket)
      const first = await store.hit(bucket, 7)
      assert.equal(first.allowed, true)
      assert.equal(first.remaining, 3)
      // Four units do not fit in the three left, and the refusal takes nothing.
      const refused = await store.hit(bucket, 4)
      assert.equal(refused.allowed, false)
      // The wait is for the one missing unit: 6 s at ten per minute.
      assert.ok(
        refused.retryAfterUs > 5_000_000 && refused.retryAfterUs <= 6_000_000,
        `${refused.retryAfterUs}`,
      )
      assert.equal((await store.hit(bucket, 3)).allowed, true)
      assert.equal((await store.hit(bucket)).allowed, false)
      // More than the whole limit never fits.
      assert.equal((await store.hit(`${bucket}-x`, 11)).allowed, false)
      buckets.add(`${bucket}-x`)
    })

    test('every response carries the limit, the exact remaining count and the reset time', async (t) => {
      const a = await account(ctx.app)
      // In this process the clock stands still, so that the bucket refills nothing between requests however slow
      // the machine (Redis keeps its own time, so that every process reads one clock).
      if (mode !== 'redis') t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
      const seen = []
      for (let i = 0; i < 5; i++) {
        const res = await send(ctx.app, { token: a.token })
        assert.equal(res.status, 200)
        seen.push(rateHeaders(res))
      }
      // 5 per 60 s: each request takes 12 s of the bucket, which the reset counts down to empty.
      assert.deepEqual(seen, [
        { limit: '5', remaining: '4', reset: '12', retryAfter: undefined },
        { limit: '5', remaining: '3', reset: '24', retryAfter: undefined },
        { limit: '5', remaining: '2', reset: '36', retryAfter: undefined },
        { limit: '5', remaining: '1', reset: '48', retryAfter: undefined },
        { limit: '5', remaining: '0', reset: '60', retryAfter: undefined },
      ])
      if (redis) {
        const key = `${REDIS_KEY_PREFIX}cred:${await credentialOf(ctx.app, a.token)}`
        const ttl = await redis.pttl(key)
        assert.ok(ttl > 59_000 && ttl <= 60_000, `${key} expires with its bucket, got a TTL of ${ttl} ms`)
      }
    })

    test('past the limit: 429 rate_limited with Retry-After, before validation, not counting refusals', async () => {
      const a = await account(ctx.app)
      for (let i = 0; i < 5; i++) assert.equal((await send(ctx.app, { token: a.token })).status, 200)
      const refused = await send(ctx.app, { token: a.token })
      assertLimited(refused, 'this credential', 12)
      assert.deepEqual(rateHeaders(refused), { limit: '5', remaining: '0', reset: '60', retryAfter: '12' })
      // An invalid body would be a 400; the limit comes first. A refusal takes nothing from the bucket,
      // so the wait does not grow.
      const invalid = await send(ctx.app, {
        token: a.token,
        method: 'POST',
        body: { name: '', extra: true },
      })
      assertLimited(invalid, 'this credential', 12)
      assert.deepEqual(rateHeaders(invalid), { limit: '5', remaining: '0', reset: '60', retryAfter: '12' })
    })

    test('each credential has its own bucket: two keys of one account, two accounts', async () => {
      const a = await account(ctx.app)
      const b = await account(ctx.app)
      const aReadOnly = await a.key(['folders:read'])
      const aFilesOnly = await a.key(['files:read'])
      for (let i = 0; i < 5; i++) assert.equal((await send(ctx.app, { token: a.token })).status, 200)
      assertLimited(await send(ctx.app, { token: a.token }), 'this credential', 12)

      for (const token of [aReadOnly, b.token]) {
        const res = await send(ctx.app, { token })
        assert.equal(res.status, 200)
        assert.equal(res.headers['ratelimit-remaining'], '4')
      }
      // A credential without the scope is counted too, and once over its limit gets 429 before the 403.
      const statuses = []
      for (let i = 0; i < 6; i++) {
        const res = await send(ctx.app, { token: aFilesOnly, method: 'POST', body: { name: 'x' } })
        statuses.push(res.status)
      }
      assert.deepEqual(statuses, [403, 403, 403, 403, 403, 429])
    })

    test('requests without a valid credential are counted per address, and limited before the 401', async () => {
      const a = await account(ctx.app)
      const ip = fromIp(randomIpv4())
      const other = fromIp(randomIpv4())
      const wrongKey = `coffer_${randomBytes(24).toString('base64url')}`
      const attempts = [
        {},
        { token: wrongKey },
        { authorization: 'Basic dXNlcjpwYXNz' },
        { token: wrongKey },
        {},
        { token: wrongKey },
        {},
      ]
      const seen = []
      for (const attempt of attempts) {
        const res = await send(ctx.app, { ip, ...attempt })
        seen.push([res.status, res.headers['ratelimit-remaining']])
        if (res.status === 401) assert.equal(res.body.error.code, 'unauthorized')
        else assertLimited(res, 'this client address', 12)
      }
      assert.deepEqual(seen, [
        [401, '4'],
        [401, '3'],
        [401, '2'],
        [401, '1'],
        [401, '0'],
        [429, '0'],
        [429, '0'],
      ])
      // Another address has its own bucket; a valid credential from the limited address has its own too.
      const elsewhere = await send(ctx.app, { ip: other, token: wrongKey })
      assert.deepEqual([elsewhere.status, elsewhere.headers['ratelimit-remaining']], [401, '4'])
      const valid = await send(ctx.app, { ip, token: a.token })
      assert.deepEqual([valid.status, valid.headers['ratelimit-remaining']], [200, '4'])

      if (redis) {
        // The buckets are named by address and credential id; no key anywhere holds the secret.
        assert.equal(await redis.exists(`${REDIS_KEY_PREFIX}${addressBucket(ip)}`), 1)
        for (const secret of [wrongKey, a.token]) {
          const found: string[] = []
          let cursor = '0'
          do {
            const [next, keys]: [string, string[]] = await redis.scan(
              cursor,
              'MATCH',
              `*${secret.slice(7, 30)}*`,
              'COUNT',
              1000,
            )
            found.push(...keys)
            cursor = next
          } while (cursor !== '0')
          assert.deepEqual(found, [], 'a secret is part of a Redis key')
        }
      }
    })

    test('the index and unknown routes count per address; health checks are exempt', async () => {
      const ip = fromIp(randomIpv4())
      const remaining = []
      for (const url of ['/api/v1/', '/api/v1/no-such-thing', '/api/v1/folders']) {
        const res = await send(ctx.app, { ip, url })
        assert.equal(res.headers['ratelimit-limit'], '5', url)
        remaining.push(res.headers['ratelimit-remaining'])
      }
      assert.deepEqual(remaining, ['4', '3', '2'])
      for (let i = 0; i < 2; i++) await send(ctx.app, { ip })
      assertLimited(await send(ctx.app, { ip }), 'this client address', 12)

      for (const url of ['/healthz', '/readyz', '/healthz?verbose=1']) {
        const res = await send(ctx.app, { ip, url })
        assert.notEqual(res.status, 429, url)
        assert.deepEqual(rateHeaders(res), {
          limit: undefined,
          remaining: undefined,
          reset: undefined,
          retryAfter: undefined,
        })
      }
    })

    test('IPv6 clients are counted per /64; IPv4-mapped addresses as their IPv4 address', async () => {
      const site = `2001:db8:${randomInt(0x10000).toString(16)}`
      const subnet = randomInt(0xffff)
      const prefix = `${site}:${subnet.toString(16)}`
      const neighbour = `${site}:${(subnet + 1).toString(16)}`
      const ipv4 = fromIp(randomIpv4())
      fromIp(`${prefix}::1`)
      fromIp(`${neighbour}::1`)
      const remaining = []
      for (const ip of [`${prefix}::1`, `${prefix}:ffff:1:2:3`, `${neighbour}::1`, ipv4, `::ffff:${ipv4}`]) {
        remaining.push((await send(ctx.app, { ip })).headers['ratelimit-remaining'])
      }
      assert.deepEqual(remaining, ['4', '3', '4', '4', '3'])
    })

    test('the bucket refills smoothly and is whole again after the window', async (t) => {
      // 2 per second: a request every 500 ms, a burst of 2.
      const windowed = await startApp('sqlite', {
        env: { RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_SECONDS: '1', ...modeEnv },
      })
      try {
        const a = await account(windowed.app)
        // In this process the limiter's clock moves only as the test says, however slow the machine; Redis keeps
        // its own time.
        const clockStill = mode !== 'redis'
        if (clockStill) t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
        const wait = (ms: number) => (clockStill ? t.mock.timers.tick(ms) : sleep(ms))
        const burst = []
        for (let i = 0; i < 3; i++) burst.push(rateHeaders(await send(windowed.app, { token: a.token })))
        assert.deepEqual(burst, [
          { limit: '2', remaining: '1', reset: '1', retryAfter: undefined },
          { limit: '2', remaining: '0', reset: '1', retryAfter: undefined },
          { limit: '2', remaining: '0', reset: '1', retryAfter: '1' },
        ])
        await wait(550)
        const statuses = [
          (await send(windowed.app, { token: a.token })).status,
          (await send(windowed.app, { token: a.token })).status,
        ]
        assert.deepEqual(statuses, [200, 429], 'half a window gives back one request')
        await wait(1000)
        const whole = await send(windowed.app, { token: a.token })
        assert.deepEqual([whole.status, whole.headers['ratelimit-remaining']], [200, '1'])
      } finally {
        await windowed.stop()
      }
    })

    if (mode !== 'redis') return

    test('two app instances on one Redis share one limit', async () => {
      const second = await buildApp({ config: ctx.config, db: ctx.db, blobs: ctx.blobs, logger: false })
      await second.ready()
      try {
        const a = await account(ctx.app)
        const ip = fromIp(randomIpv4())
        const apps = [ctx.app, second, ctx.app, second, ctx.app, second, ctx.app]
        const byCredential = []
        const byAddress = []
        for (const app of apps) {
          const res = await send(app, { token: a.token })
          byCredential.push([res.status, res.headers['ratelimit-remaining']])
          byAddress.push((await send(app, { ip })).status)
        }
        assert.deepEqual(byCredential, [...fiveThenLimited(200), [429, '0']])
        assert.deepEqual(byAddress, [401, 401, 401, 401, 401, 429, 429])
      } finally {
        await second.close()
      }
    })

    test('Redis failing on a command: the request is decided locally, with one warning', async () => {
      const sink = captureLogs()
      const failing = await startApp('sqlite', {
        env: { ...LIMITS, ...modeEnv, LOG_LEVEL: 'warn' },
        logger: sink.logger,
      })
      const ip = fromIp(randomIpv4())
      try {
        // A bucket key of the wrong type makes the script fail on the server.
        assert.ok(redis)
        await redis.hset(`${REDIS_KEY_PREFIX}${addressBucket(ip)}`, 'not', 'a bucket')
        assert.deepEqual(await sixInARow(failing.app, { ip }), fiveThenLimited(401))
        const warnings = sink.lines().filter((line) => line.level === 40)
        assert.equal(warnings.length, 1, JSON.stringify(warnings))
        assert.match(warnings[0].msg, /Redis is unavailable for rate limiting/)
        assert.match(warnings[0].redisError, /WRONGTYPE/)
      } finally {
        await failing.stop()
      }
    })
  })
}

describe('rate limiting [Redis down]', () => {
  test('requests are served at once, limited per process, with one warning and a prompt shutdown', async () => {
    const sink = captureLogs()
    const started = Date.now()
    const ctx = await startApp('sqlite', {
      env: { ...LIMITS, REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'warn' },
      logger: sink.logger,
    })
    try {
      const a = await createAccount(ctx.app)
      assert.deepEqual(await sixInARow(ctx.app, { token: a.token }), fiveThenLimited(200))
      assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`)
      // ioredis keeps retrying in the background; the warnings stay at one per interval.
      await sleep(700)
      const warnings = sink.lines().filter((line) => line.level === 40)
      assert.equal(warnings.length, 1, JSON.stringify(warnings))
      assert.match(warnings[0].redisError, /ECONNREFUSED/)
      assert.ok(!JSON.stringify(sink.lines()).includes(a.token), 'the key reached the log')
    } finally {
      const stopping = Date.now()
      await ctx.stop()
      assert.ok(Date.now() - stopping < 2000, 'closing waited on the unreachable Redis')
    }
  })
})
