// Every setting Coffer reads from the environment, validated in one place. Each default serves the
// embedded mode (`npm start` on a fresh clone); the README lists them all.
import { createHash } from 'node:crypto'
import path from 'node:path'
import ipaddr from 'ipaddr.js'

export interface Config {
  port: number
  host: string
  /** Origin used to build absolute URLs (see public-urls.ts), without a trailing slash. */
  publicUrl: string
  dataDir: string
  /** Where file bytes live: `DATA_DIR/blobs` (the default), or an S3-compatible bucket (blob/open-blob-store.ts). */
  blobStore: BlobStoreConfig
  /** Unset: SQLite in `dataDir`. `postgres://...`: PostgreSQL. */
  databaseUrl: string | undefined
  logLevel: string
  /**
   * Which peers may say who the client is (X-Forwarded-For, -Proto, -Host): none (false), the nearest `n` hops
   * (TRUST_PROXY=true is one: the proxy in front), or the proxies at these addresses and ranges. The client is
   * then the nearest address of X-Forwarded-For that is not a trusted proxy's, so a client cannot choose its own.
   */
  trustProxy: TrustProxy
  redisUrl: string | undefined
  rateLimit: { max: number; windowMs: number }
  /** Largest file, in bytes, that POST /files accepts. */
  maxFileSize: number
  /** How many days a deleted file stays in the trash, restorable (files/trash.service.ts); 0: deletes are final. */
  trashRetentionDays: number
  /** How many days the audit log keeps an entry (AUDIT_RETENTION_DAYS, 365 by default). */
  auditRetentionDays: number
  /** Lifetime of an upload grant, in seconds. */
  uploadGrantTtlSeconds: number
  /**
   * Signs upload client tokens. Unset: generated once and kept in the database, so
   * every process of a deployment shares it.
   */
  uploadSigningSecret: string | undefined
  /** Files each process keeps in memory for GET /files/{id}, downloads and search results; 0: none. */
  fileCacheSize: number
  /**
   * Behind nginx: the prefix of its internal location that serves `DATA_DIR/blobs/` (e.g. `/_coffer_blobs/`).
   * Set, a download is checked and counted here, then answered with `X-Accel-Redirect: <prefix><blob path>` and
   * no body, and nginx sends the bytes. Unset (the default): Coffer streams them itself.
   */
  downloadAccelRedirect: string | undefined
  /**
   * `presigned` (BLOB_STORE=s3 only): a download is checked and counted here, then answered with a redirect to a
   * presigned GET of its object, and the object store sends the bytes. Unset (the default): Coffer streams them.
   */
  downloadRedirect: 'presigned' | undefined
  /** Who may make an account themselves, and from which email domains (accounts/sign-up-policy.ts). */
  signUp: SignUpConfig
  /**
   * DEFAULT_QUOTA_BYTES: how much an account may store (trash included) unless an admin set its own quota;
   * undefined: no limit.
   */
  defaultQuotaBytes: number | undefined
  /**
   * Sign-in with an external OpenID Connect provider: OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (all
   * or none), OIDC_NAME for its button; SSO_ONLY=true hides the password form. Undefined: passwords only.
   */
  oidc: OidcConfig | undefined
  /**
   * WEBHOOKS_ALLOW_PRIVATE=true: webhooks may go to loopback and private addresses, over http:// too (tests, a
   * LAN). Off by default: only https:// to public addresses (webhooks/webhook-targets.ts).
   */
  webhooksAllowPrivate: boolean
  /**
   * Email (mail/): SMTP_URL (`smtp://` or `smtps://`, credentials in it) and MAIL_FROM, the sender's address. Both
   * or neither; without them nothing is sent and the pages offer nothing that needs email.
   */
  mail: { smtpUrl: string; from: string } | undefined
  /**
   * On SIGTERM (server.ts): `/readyz` fails at once and requests are still served for `graceMs`, while load
   * balancers notice; then new connections are refused and what is under way has `timeoutMs` to finish.
   */
  shutdown: { graceMs: number; timeoutMs: number }
  /** GET /metrics (http/metrics.ts); off unless a port or a token is set. */
  metrics: MetricsConfig
  /** How often the storage reconciler runs (storage/reconciler.job.ts); 0: only on demand, from the CLI. */
  storageCheckIntervalMs: number
  /** How long clients may take, so that slow or idle ones cannot hold connections (http/connections.ts). */
  timeouts: {
    /** To send a request's headers, whole. */
    headersMs: number
    /** Without a byte either way while a request is received or answered: a minimum rate, not a total. */
    idleMs: number
    /** An idle keep-alive connection between requests. */
    keepAliveMs: number
    /** To send a whole request, body included: every request but the blob endpoint's, whose bodies are small. */
    bodyMs: number
    /** What the blob endpoint's bodies must bring in every `idleMs`: bytes per second, on average. */
    uploadMinBytesPerSecond: number
    /** Connections open at once from one client address (an IPv6 one by its /64); 0: no cap. */
    connectionsPerAddress: number
  }
}

export type TrustProxy = false | number | string[]

export interface SignUpConfig {
  /**
   * SIGNUP: `invite` (the default: an admin's invitation makes an account), `closed` (only admins make
   * accounts), `open` (anyone may, on the sign-up page or through single sign-on).
   */
  policy: 'invite' | 'closed' | 'open'
  /**
   * SIGNUP_EMAIL_DOMAINS, comma-separated (lowercase, without `@`): open sign-up and accounts made by single
   * sign-on only for addresses at these domains. Undefined: any domain.
   */
  emailDomains: string[] | undefined
}

export interface OidcConfig {
  issuer: string
  clientId: string
  clientSecret: string
  /** The button's words: "Sign in with {name}". */
  name: string
  /** SSO_ONLY=true: the sign-in page offers the provider only (the admin command still sets passwords). */
  only: boolean
}

export type BlobStoreConfig =
  | { kind: 'local' }
  | {
      kind: 's3'
      bucket: string
      /** Prepended to every key: `''`, or segments ending with `/`. */
      prefix: string
      /** Buckets in the path (`https://host/bucket/key`), for servers without virtual-host buckets. */
      forcePathStyle: boolean
      /**
       * S3_TIMEOUT_SECONDS: a request to the object store that goes this long without a byte either way (or
       * cannot connect within the shorter of this and 5 s) fails, and is answered 503. A slow but moving
       * transfer is never cut.
       */
      timeoutMs: number
    }

export interface MetricsConfig {
  /** METRICS_PORT: a listener of their own, on METRICS_HOST (127.0.0.1 by default), for whoever reaches it. */
  port: number | undefined
  host: string
  /** SHA-256 of METRICS_TOKEN: GET /metrics on the main port for its bearer (the token itself is not kept). */
  tokenHash: Buffer | undefined
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function integer(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`)
  return value
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`)
  return raw === 'true'
}

/** Names proxy-addr (Fastify's trustProxy) gives to address ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * TRUST_PROXY: `false` (the default), `true` (one hop), a number of hops, or a comma-separated list of proxy
 * addresses, CIDR ranges and the names `loopback`, `linklocal` and `uniquelocal`.
 */
function trustProxy(env: Env): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim()
  if (raw === '' || raw === 'false') return false
  if (raw === 'true') return 1
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw)
    if (hops < 1 || hops > 10) throw new ConfigError(`TRUST_PROXY must count 1 to 10 hops, got ${hops}`)
    return hops
  }
  const entries = raw.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    const valid =
      PROXY_RANGE_NAMES.has(entry) ||
      ipaddr.isValid(entry) ||
      (entry.includes('/') && ipaddr.isValidCIDR(entry))
    if (!valid) {
      throw new ConfigError(
        `TRUST_PROXY must be true, false, a number of hops, or proxy addresses and ranges separated by commas ` +
          `(127.0.0.1,10.0.0.0/8,loopback); "${entry}" is none of them`,
      )
    }
  }
  return entries
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a valid URL`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`)
  }
  return raw
}

function mail(env: Env): Config['mail'] {
  const smtpUrl = url(env, 'SMTP_URL', ['smtp:', 'smtps:'])
  const from = env.MAIL_FROM || undefined
  if (smtpUrl === undefined && from === undefined) return undefined
  if (smtpUrl === undefined) throw new ConfigError('MAIL_FROM is set without SMTP_URL: set both, or neither')
  if (from === undefined) throw new ConfigError('SMTP_URL is set without MAIL_FROM: set both, or neither')
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(from.replace(/^.*<(.*)>\s*$/, '$1'))) {
    throw new ConfigError('MAIL_FROM must be an email address, or "Name <address>"')
  }
  return { smtpUrl, from }
}

function secret(env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (raw.length < 32) throw new ConfigError(`${name} must be at least 32 characters long`)
  return raw
}

// An absolute path of one or more plain segments (none of them `.` or `..`), ending with `/`: nginx matches it
// as a location prefix, and Coffer appends a blob's path (lowercase letters, digits, `_`, `-`, `/`) to it as is.
const ACCEL_PREFIX = /^\/(?:[A-Za-z0-9_~-][A-Za-z0-9._~-]*\/)+$/

function accelPrefix(env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (!ACCEL_PREFIX.test(raw)) {
    throw new ConfigError(
      `${name} must be the path of nginx's internal location, like /_coffer_blobs/ (starting and ending with /), got "${raw}"`,
    )
  }
  return raw
}

function timeouts(env: Env): Config['timeouts'] {
  const headersMs = integer(env, 'HEADERS_TIMEOUT_SECONDS', 20, 1, 3600) * 1000
  const idleMs = integer(env, 'IDLE_TIMEOUT_SECONDS', 60, 1, 3600) * 1000
  // Until the headers are in, only the headers timeout may end a request: it answers 408 in the envelope,
  // where the idle timeout, firing first, could only close the connection.
  if (headersMs >= idleMs) {
    throw new ConfigError('HEADERS_TIMEOUT_SECONDS must be less than IDLE_TIMEOUT_SECONDS')
  }
  return {
    headersMs,
    idleMs,
    keepAliveMs: integer(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 5, 1, 3600) * 1000,
    bodyMs: integer(env, 'BODY_TIMEOUT_SECONDS', 10, 1, 3600) * 1000,
    uploadMinBytesPerSecond: integer(env, 'UPLOAD_MIN_BYTES_PER_SECOND', 1024, 0, 1024 * 1024 * 1024),
    // Behind a proxy every connection comes from the proxy: no cap unless one is asked for.
    connectionsPerAddress: integer(
      env,
      'MAX_CONNECTIONS_PER_ADDRESS',
      trustProxy(env) === false ? 256 : 0,
      0,
      1_000_000,
    ),
  }
}

function signUp(env: Env): SignUpConfig {
  const policy = env.SIGNUP || 'invite'
  if (policy !== 'invite' && policy !== 'closed' && policy !== 'open') {
    throw new ConfigError(`SIGNUP must be invite, closed or open, got "${policy}"`)
  }
  const raw = (env.SIGNUP_EMAIL_DOMAINS ?? '').trim()
  if (raw === '') return { policy, emailDomains: undefined }
  const emailDomains = raw.split(',').map((domain) => domain.trim().toLowerCase().replace(/^@/, ''))
  for (const domain of emailDomains) {
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain)) {
      throw new ConfigError(
        `SIGNUP_EMAIL_DOMAINS must be domains separated by commas (example.com,example.org); "${domain}" is not one`,
      )
    }
  }
  return { policy, emailDomains }
}

function oidc(env: Env): OidcConfig | undefined {
  const issuer = url(env, 'OIDC_ISSUER', ['https:', 'http:'])
  const clientId = env.OIDC_CLIENT_ID || undefined
  const clientSecret = env.OIDC_CLIENT_SECRET || undefined
  const only = boolean(env, 'SSO_ONLY', false)
  if (issuer === undefined && clientId === undefined && clientSecret === undefined) {
    if (only)
      throw new ConfigError(
        'SSO_ONLY=true needs a provider: set OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET',
      )
    return undefined
  }
  if (issuer === undefined || clientId === undefined || clientSecret === undefined) {
    throw new ConfigError(
      'OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET go together: set all three, or none',
    )
  }
  const name = (env.OIDC_NAME ?? '').trim() || new URL(issuer).hostname
  return { issuer: issuer.replace(/\/+$/, ''), clientId, clientSecret, name, only }
}

function optionalInteger(env: Env, name: string, min: number): number | undefined {
  const raw = env[name]
  return raw === undefined || raw === '' ? undefined : integer(env, name, 0, min)
}

// S3's bucket names: 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit.
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/

/**
 * BLOB_STORE=local (the default) or s3 with S3_BUCKET, S3_PREFIX and S3_FORCE_PATH_STYLE; the rest (region,
 * credentials, endpoint) is the AWS SDK's own configuration, read by the SDK.
 */
function blobStore(env: Env): BlobStoreConfig {
  const kind = env.BLOB_STORE || 'local'
  if (kind === 'local') return { kind }
  if (kind !== 's3') throw new ConfigError(`BLOB_STORE must be local or s3, got "${kind}"`)
  const bucket = env.S3_BUCKET ?? ''
  if (!BUCKET_NAME.test(bucket)) {
    throw new ConfigError(
      bucket
        ? `S3_BUCKET must be a bucket name (3 to 63 of a-z, 0-9, "." and "-"), got "${bucket}"`
        : 'BLOB_STORE=s3 needs S3_BUCKET, the name of the bucket that holds the blobs',
    )
  }
  const prefix = (env.S3_PREFIX ?? '').replace(/^\/+|\/+$/g, '')
  if (prefix.length > 255 || (prefix !== '' && !/^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/.test(prefix))) {
    throw new ConfigError(
      `S3_PREFIX must be at most 255 characters of "/"-separated segments of letters, digits, ".", "_" and "-", got "${env.S3_PREFIX}"`,
    )
  }
  return {
    kind,
    bucket,
    prefix: prefix === '' ? '' : `${prefix}/`,
    forcePathStyle: boolean(env, 'S3_FORCE_PATH_STYLE', false),
    timeoutMs: integer(env, 'S3_TIMEOUT_SECONDS', 20, 1, 3600) * 1000,
  }
}

function downloadRedirect(env: Env): 'presigned' | undefined {
  const raw = env.DOWNLOAD_REDIRECT || undefined
  if (raw === undefined) return undefined
  if (raw !== 'presigned') throw new ConfigError(`DOWNLOAD_REDIRECT must be presigned or unset, got "${raw}"`)
  if (env.DOWNLOAD_ACCEL_REDIRECT) {
    throw new ConfigError('Set DOWNLOAD_REDIRECT or DOWNLOAD_ACCEL_REDIRECT, not both: one sends the bytes')
  }
  return raw
}

function metrics(env: Env): MetricsConfig {
  const token = secret(env, 'METRICS_TOKEN')
  return {
    port: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, 1, 65535) : undefined,
    host: env.METRICS_HOST || '127.0.0.1',
    tokenHash: token === undefined ? undefined : createHash('sha256').update(token).digest(),
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535)
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(
    /\/+$/,
    '',
  )
  const logLevel = env.LOG_LEVEL || 'info'
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)
  return {
    port,
    host: env.HOST || '0.0.0.0',
    publicUrl,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    blobStore: blobStore(env),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    logLevel,
    trustProxy: trustProxy(env),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    rateLimit: {
      max: integer(env, 'RATE_LIMIT_MAX', 600, 1),
      windowMs: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400) * 1000,
    },
    maxFileSize: integer(env, 'MAX_FILE_SIZE', 5 * 1024 ** 3, 1),
    trashRetentionDays: integer(env, 'TRASH_RETENTION_DAYS', 30, 0, 3650),
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36500),
    uploadGrantTtlSeconds: integer(env, 'UPLOAD_GRANT_TTL_SECONDS', 3600, 60, 7 * 86_400),
    uploadSigningSecret: secret(env, 'UPLOAD_SIGNING_SECRET'),
    fileCacheSize: integer(env, 'FILE_CACHE_SIZE', 10_000, 0, 1_000_000),
    downloadAccelRedirect: accelPrefix(env, 'DOWNLOAD_ACCEL_REDIRECT'),
    downloadRedirect: downloadRedirect(env),
    shutdown: {
      graceMs: integer(env, 'SHUTDOWN_GRACE_SECONDS', 5, 0, 600) * 1000,
      timeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_SECONDS', 30, 1, 86_400) * 1000,
    },
    timeouts: timeouts(env),
    metrics: metrics(env),
    signUp: signUp(env),
    defaultQuotaBytes: optionalInteger(env, 'DEFAULT_QUOTA_BYTES', 0),
    oidc: oidc(env),
    webhooksAllowPrivate: boolean(env, 'WEBHOOKS_ALLOW_PRIVATE', false),
    mail: mail(env),
    storageCheckIntervalMs: integer(env, 'STORAGE_CHECK_INTERVAL_SECONDS', 86_400, 0, 365 * 86_400) * 1000,
  }
}
