// API keys: long random bearer secrets with a recognisable prefix. Only a SHA-256 of each is stored;
// the secret is shown once, when the key is created.
import type { Kysely } from 'kysely'
import type { Scope } from '../auth/scopes.ts'
import { constantTimeEqual, hashSecret, newSecret } from '../auth/secrets.ts'
import type { Db } from '../db/database.ts'
import { EpochCache } from '../db/epoch-cache.ts'
import { prepare } from '../db/prepared.ts'
import type { Database } from '../db/schema.ts'
import { invalid, notFound } from '../errors.ts'
import { newId } from '../ids.ts'

/** Every API key starts with this, so leaked keys are easy to recognise and scan for. */
export const API_KEY_PREFIX = 'coffer_'
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 6
// Writing last_used_at on every request would turn every read into a write; once a minute is enough.
const LAST_USED_RESOLUTION_MS = 60_000
/** Credentials remembered per process: the keys in use by recent clients, bounded so guessing cannot grow it. */
const CACHE_SIZE = 10_000
/** However quiet the epoch, a cached key is read again after this long (see EpochCache). */
const CACHE_MAX_AGE_MS = 60_000

export interface ApiKey {
  id: string
  accountId: string
  name: string
  prefix: string
  scopes: Scope[]
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
}

export interface Principal {
  accountId: string
  scopes: ReadonlySet<Scope>
  /** Identifies the credential (not its secret), e.g. for rate limiting. */
  credentialId: string
}

type KeyRow = Database['api_keys']

function toApiKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes.split(' ').filter(Boolean) as Scope[],
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }
}

/** Runs on every authenticated request, so it is compiled once. */
const keyByHashQuery = (db: Db) =>
  prepare(db, 'api_key_by_hash', 1, (hash: string) =>
    db.kysely
      .selectFrom('api_keys')
      .select(['id', 'account_id', 'secret_hash', 'scopes', 'revoked_at', 'last_used_at'])
      .where('secret_hash', '=', hash),
  )

interface CachedKey {
  principal: Principal
  lastUsedAt: number | null
}

export class ApiKeysService {
  readonly #database: Db
  readonly #db: Kysely<Database>
  readonly #findByHash: ReturnType<typeof keyByHashQuery>
  /**
   * Valid keys by secret hash. Every authenticated request needs its key, and the lookup is a large share of
   * a small request's cost. Stamped with `Db.credentialEpoch()`, so a revocation by any process takes effect
   * for the next request as it would without the cache. Unknown secrets are never cached.
   */
  readonly #cache = new EpochCache<CachedKey>({ maxEntries: CACHE_SIZE, maxAgeMs: CACHE_MAX_AGE_MS })

  constructor(db: Db) {
    this.#database = db
    this.#db = db.kysely
    this.#findByHash = keyByHashQuery(db)
  }

  async create(input: {
    accountId: string
    name: string
    scopes: Scope[]
  }): Promise<{ key: ApiKey; secret: string }> {
    const name = input.name.trim()
    if (name.length < 1 || name.length > 100) throw invalid('The key name must be 1 to 100 characters.')
    if (input.scopes.length === 0) throw invalid('A key needs at least one scope.')
    const secret = newSecret(API_KEY_PREFIX)
    const now = Date.now()
    const row: KeyRow = {
      id: newId('key', now),
      account_id: input.accountId,
      name,
      secret_hash: hashSecret(secret),
      prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
      scopes: input.scopes.join(' '),
      created_at: now,
      last_used_at: null,
      revoked_at: null,
    }
    await this.#db.insertInto('api_keys').values(row).execute()
    return { key: toApiKey(row), secret }
  }

  async list(accountId: string): Promise<ApiKey[]> {
    const rows = await this.#db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute()
    return rows.map(toApiKey)
  }

  /** Revokes a key; pass `accountId` to confine it to one account's keys. Idempotent. */
  async revoke(id: string, accountId?: string): Promise<ApiKey> {
    let query = this.#db
      .updateTable('api_keys')
      .set({ revoked_at: Date.now() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
    if (accountId) query = query.where('account_id', '=', accountId)
    await query.execute()
    // Other processes learn of it through the epoch; this one need not wait for that.
    this.#cache.deleteWhere((cached) => cached.principal.credentialId === id)
    let select = this.#db.selectFrom('api_keys').selectAll().where('id', '=', id)
    if (accountId) select = select.where('account_id', '=', accountId)
    const row = await select.executeTakeFirst()
    if (!row) throw notFound(`API key ${id}`)
    return toApiKey(row)
  }

  /** The principal a bearer secret stands for, or undefined if it is unknown or revoked. */
  async authenticate(secret: string): Promise<Principal | undefined> {
    if (!secret.startsWith(API_KEY_PREFIX)) return undefined
    const hash = hashSecret(secret)
    const epoch = this.#database.credentialEpoch()
    const now = Date.now()
    let key = this.#cache.get(hash, epoch, now)
    if (!key) {
      key = await this.#lookUp(hash)
      if (!key) return undefined
      this.#cache.set(hash, key, epoch, now)
    }
    if (key.lastUsedAt === null || now - key.lastUsedAt > LAST_USED_RESOLUTION_MS) {
      key.lastUsedAt = now
      await this.#db
        .updateTable('api_keys')
        .set({ last_used_at: now })
        .where('id', '=', key.principal.credentialId)
        .execute()
    }
    return key.principal
  }

  async #lookUp(hash: string): Promise<CachedKey | undefined> {
    const [row] = await this.#findByHash(hash)
    // The lookup is by hash, so timing reveals nothing about the secret; the comparison guards the rest.
    if (!row || row.revoked_at !== null || !constantTimeEqual(row.secret_hash, hash)) return undefined
    return {
      principal: {
        accountId: row.account_id,
        scopes: new Set(row.scopes.split(' ') as Scope[]),
        credentialId: row.id,
      },
      lastUsedAt: row.last_used_at,
    }
  }
}
