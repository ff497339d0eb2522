// API keys' SQL. A key is found by the SHA-256 of its secret, on every authenticated request, so that lookup
// is compiled once and goes through a per-process cache of the keys in use (read-path/cached-lookup.ts).
import type { Kysely } from 'kysely'
import type { Principal } from '../../platform/auth/principal.ts'
import type { Scope } from '../../platform/auth/scopes.ts'
import { constantTimeEqual } from '../../platform/auth/secrets.ts'
import type { Db, Executor } from '../../platform/db/database.ts'
import { type CachedLookup, cachedLookup } from '../../platform/db/read-path/cached-lookup.ts'
import { prepare } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'

export interface ApiKey {
  id: string
  accountId: string
  name: string
  prefix: string
  scopes: Scope[]
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
  expiresAt: number | null
}

/** What authenticating needs of a key. */
export interface KeyCredential {
  /** Who the key acts for, made once per read, as every request with the key needs it. */
  principal: Principal
  revoked: boolean
  /** Null for a key that never expires. */
  expiresAt: number | null
  lastUsedAt: number | null
}

/** Keys remembered per process: those of recent clients, bounded so that guessing cannot grow it. */
const CACHE_SIZE = 10_000
/** However quiet the epoch, a cached key is read again after this long (see epoch-cache.ts). */
const CACHE_MAX_AGE_MS = 60_000

type KeyRow = Database['api_keys']

const scopesOf = (row: { scopes: string }) => row.scopes.split(' ').filter(Boolean) as Scope[]

function toApiKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    prefix: row.prefix,
    scopes: scopesOf(row),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  }
}

export class ApiKeysRepository {
  readonly #db: Kysely<Database>
  readonly #byHash: CachedLookup<KeyCredential>

  constructor(db: Db) {
    this.#db = db.kysely
    const findByHash = prepare(db, 'api_key_by_hash', 1, (hash: string) =>
      db.kysely
        .selectFrom('api_keys')
        .select([
          'id',
          'account_id',
          'name',
          'secret_hash',
          'scopes',
          'revoked_at',
          'expires_at',
          'last_used_at',
        ])
        .where('secret_hash', '=', hash),
    )
    this.#byHash = cachedLookup(db, {
      watched: 'credentials',
      maxEntries: CACHE_SIZE,
      maxAgeMs: CACHE_MAX_AGE_MS,
      read: async (hash) => {
        const [row] = await findByHash(hash)
        // Found by the hash, so timing reveals nothing of the secret; the comparison makes sure of the match
        // byte for byte, whatever the index compared, once per read rather than once per request.
        if (!row || !constantTimeEqual(row.secret_hash, hash)) return undefined
        return {
          principal: {
            accountId: row.account_id,
            scopes: new Set(scopesOf(row)),
            credentialId: row.id,
            actor: { type: 'key', id: row.id, name: row.name },
          },
          revoked: row.revoked_at !== null,
          expiresAt: row.expires_at === null ? null : Number(row.expires_at),
          lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
        }
      },
    })
  }

  async insert(key: ApiKey & { secretHash: string }, executor: Executor = this.#db): Promise<void> {
    await executor
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        name: key.name,
        secret_hash: key.secretHash,
        prefix: key.prefix,
        scopes: key.scopes.join(' '),
        created_at: key.createdAt,
        last_used_at: key.lastUsedAt,
        revoked_at: key.revokedAt,
        expires_at: key.expiresAt,
      })
      .execute()
  }

  /** The account's keys, newest first, revoked ones included. */
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

  /**
   * The key whose secret has this hash, revoked or not. The returned object is the cached entry: a change
   * to its `lastUsedAt` is remembered with it.
   */
  byHash(secretHash: string): Promise<KeyCredential | undefined> {
    return this.#byHash.get(secretHash)
  }

  async recordUse(keyId: string, at: number): Promise<void> {
    await this.#db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute()
  }

  /**
   * Revokes the key (of `accountId` only, when given), unless it is revoked already: answers the key it revoked
   * (its account and name, which the audit log records), or undefined when it revoked none.
   */
  async revoke(
    keyId: string,
    accountId?: string,
    executor: Executor = this.#db,
  ): Promise<{ accountId: string; name: string } | undefined> {
    let query = executor
      .updateTable('api_keys')
      .set({ revoked_at: Date.now() })
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
    if (accountId) query = query.where('account_id', '=', accountId)
    const revoked = await query.returning(['account_id', 'name']).executeTakeFirst()
    // Other processes learn of it through the epoch; this one need not wait for that.
    this.#byHash.forget((key) => key.principal.credentialId === keyId)
    return revoked && { accountId: revoked.account_id, name: revoked.name }
  }

  /** Revokes every key of the account not revoked yet (the account is disabled). */
  async revokeAllOf(accountId: string): Promise<void> {
    await this.#db
      .updateTable('api_keys')
      .set({ revoked_at: Date.now() })
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null)
      .execute()
    this.#byHash.forget((key) => key.principal.accountId === accountId)
  }

  async get(keyId: string, accountId?: string): Promise<ApiKey | undefined> {
    let select = this.#db.selectFrom('api_keys').selectAll().where('id', '=', keyId)
    if (accountId) select = select.where('account_id', '=', accountId)
    const row = await select.executeTakeFirst()
    return row && toApiKey(row)
  }
}
