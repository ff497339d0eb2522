// The authorization server's state (oidc-provider's models) in one table, `oauth_records`. A record is found
// by model and the SHA-256 of its id: most ids are bearer secrets (codes, tokens, the device and user codes,
// the server's own session cookie), and none is stored as given. The id (`jti`) and a device code's user
// code are taken out of the stored JSON and put back when the record is read with them.
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Kysely } from 'kysely'
import { hashSecret } from '../../platform/auth/secrets.ts'
import type { Db, Executor } from '../../platform/db/database.ts'
import { type CachedLookup, cachedLookup } from '../../platform/db/read-path/cached-lookup.ts'
import { prepare } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'

export type OauthPayload = Record<string, unknown> & {
  jti?: string
  grantId?: string
  accountId?: string
  uid?: string
  userCode?: string
  consumed?: number
  exp?: number
}

/** Grants of an account, for its "connected applications". */
export interface StoredGrant {
  grantId: string
  clientId: string
  accountId: string
  /** The scopes granted for the API, as the grant's payload records them. */
  payload: OauthPayload
  lastUsedAt: number | null
}

/**
 * What authenticating an access token needs: the entry kept in memory, so that a change to its
 * `grantLastUsedAt` is remembered with it.
 */
export interface StoredAccessToken {
  payload: OauthPayload
  /** When the token ends, in epoch milliseconds. */
  expiresAt: number
  grantLastUsedAt: number | null
}

/** Tokens remembered per process: those of recent clients, bounded so that guessing cannot grow it. */
const CACHED_TOKENS = 10_000
/** However quiet the epoch, a cached token is read again after this long (see epoch-cache.ts). */
const CACHED_TOKEN_MAX_AGE_MS = 60_000

const nowSeconds = () => Math.floor(Date.now() / 1000)

/**
 * Records the library finds by another key (a session by its uid, a device code by its user code) and then
 * saves again by their id: that id is a secret stored only as its hash, so they are handed out with a
 * reference to their row instead, `ref:<hash of the id>`, which only these models accept.
 */
const REFERABLE = new Set(['Session', 'DeviceCode'])
const REFERENCE = /^ref:([0-9a-f]{64})$/

function idHashOf(model: string, id: string): string {
  const reference = REFERABLE.has(model) ? REFERENCE.exec(id) : null
  return reference ? (reference[1] as string) : hashSecret(id)
}

function stored(model: string, id: string, row: { payload: string; consumed_at: number | null }) {
  const payload = JSON.parse(row.payload) as OauthPayload
  if (model !== 'Client') payload.jti = id
  if (row.consumed_at !== null) payload.consumed = Number(row.consumed_at)
  return payload
}

export class OauthRecordsRepository {
  readonly #db: Kysely<Database>
  /**
   * The lookup every request with an access token makes, by the token's hash: compiled once, and kept in
   * memory as API keys are (read-path/cached-lookup.ts), so that a token costs what a key costs. An entry is
   * dropped when the token or its grant may have ended: here at once by the deletes below, in other processes
   * by the epoch of `credentials` (the triggers of migration 0025), so that the next request with a revoked
   * token, or one of a grant a replayed refresh token ended, is refused in any process.
   */
  readonly #accessTokens: CachedLookup<StoredAccessToken>
  /** The transaction the saves of `within`'s work join. */
  readonly #transactionOf = new AsyncLocalStorage<Executor>()

  /** A client's registration, read outside any transaction (by its prepared statement). */
  readonly #findClient: (hash: string) => Promise<{ payload: string }[]>

  constructor(db: Db) {
    this.#db = db.kysely
    this.#findClient = prepare(db, 'oauth_client', 1, (hash: string) =>
      db.kysely
        .selectFrom('oauth_records')
        .select('payload')
        .where('model', '=', 'Client')
        .where('id_hash', '=', hash),
    )
    const findAccessToken = prepare(db, 'oauth_access_token', 1, (hash: string) =>
      db.kysely
        .selectFrom('oauth_records as t')
        .innerJoin('oauth_records as g', (join) =>
          join.onRef('g.grant_id', '=', 't.grant_id').on('g.model', '=', 'Grant'),
        )
        .select(['t.payload', 't.expires_at', 'g.last_used_at'])
        .where('t.model', '=', 'AccessToken')
        .where('t.id_hash', '=', hash),
    )
    this.#accessTokens = cachedLookup(db, {
      watched: 'credentials',
      maxEntries: CACHED_TOKENS,
      maxAgeMs: CACHED_TOKEN_MAX_AGE_MS,
      read: async (hash) => {
        const [row] = await findAccessToken(hash)
        if (!row || row.expires_at === null) return undefined
        return {
          // Without its id (`jti`): the token is not kept in memory as given, only its hash.
          payload: JSON.parse(row.payload) as OauthPayload,
          expiresAt: Number(row.expires_at),
          grantLastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
        }
      },
    })
  }

  /**
   * Runs `work` with this repository's saves (`upsert`) in the caller's transaction `trx`: a grant the provider
   * saves (its own `save`, which takes no transaction) is then written with the audit entry that records it.
   */
  within<T>(trx: Executor, work: () => Promise<T>): Promise<T> {
    return this.#transactionOf.run(trx, work)
  }

  async upsert(model: string, id: string, payload: OauthPayload, expiresInSeconds?: number): Promise<void> {
    const { jti: _id, userCode, ...rest } = payload
    const grantId = model === 'Grant' ? id : (payload.grantId ?? null)
    const row = {
      payload: JSON.stringify(rest),
      grant_id: grantId,
      uid_hash: payload.uid ? hashSecret(payload.uid) : null,
      user_code_hash: userCode ? hashSecret(userCode) : null,
      account_id: model === 'Grant' ? (payload.accountId ?? null) : null,
      expires_at: expiresInSeconds ? Date.now() + expiresInSeconds * 1000 : null,
    }
    await (this.#transactionOf.getStore() ?? this.#db)
      .insertInto('oauth_records')
      .values({ model, id_hash: idHashOf(model, id), consumed_at: null, last_used_at: null, ...row })
      .onConflict((oc) => oc.columns(['model', 'id_hash']).doUpdateSet(row))
      .execute()
  }

  async find(model: string, id: string): Promise<OauthPayload | undefined> {
    const row = await this.#live()
      .select(['payload', 'consumed_at'])
      .where('model', '=', model)
      .where('id_hash', '=', idHashOf(model, id))
      .executeTakeFirst()
    return row && stored(model, id, row)
  }

  async findByUid(model: string, uid: string): Promise<OauthPayload | undefined> {
    const row = await this.#live()
      .select(['payload', 'consumed_at', 'id_hash'])
      .where('model', '=', model)
      .where('uid_hash', '=', hashSecret(uid))
      .executeTakeFirst()
    return row && stored(model, `ref:${row.id_hash}`, row)
  }

  async findByUserCode(model: string, userCode: string): Promise<OauthPayload | undefined> {
    const row = await this.#live()
      .select(['payload', 'consumed_at', 'id_hash'])
      .where('model', '=', model)
      .where('user_code_hash', '=', hashSecret(userCode))
      .executeTakeFirst()
    return row && { ...stored(model, `ref:${row.id_hash}`, row), userCode }
  }

  /**
   * Marks a code or refresh token used, if it was not: false when it was, so that of two redemptions at
   * once only one succeeds.
   */
  async consume(model: string, id: string): Promise<{ consumed: boolean; grantId: string | null }> {
    const idHash = idHashOf(model, id)
    const updated = await this.#db
      .updateTable('oauth_records')
      .set({ consumed_at: nowSeconds() })
      .where('model', '=', model)
      .where('id_hash', '=', idHash)
      .where('consumed_at', 'is', null)
      .returning('grant_id')
      .executeTakeFirst()
    if (updated) return { consumed: true, grantId: updated.grant_id }
    const row = await this.#db
      .selectFrom('oauth_records')
      .select('grant_id')
      .where('model', '=', model)
      .where('id_hash', '=', idHash)
      .executeTakeFirst()
    return { consumed: false, grantId: row?.grant_id ?? null }
  }

  async destroy(model: string, id: string, executor: Executor = this.#db): Promise<void> {
    const idHash = idHashOf(model, id)
    await executor
      .deleteFrom('oauth_records')
      .where('model', '=', model)
      .where('id_hash', '=', idHash)
      .execute()
    if (model === 'AccessToken') this.#accessTokens.forgetKey(idHash)
  }

  async revokeByGrantId(model: string, grantId: string): Promise<void> {
    await this.#db
      .deleteFrom('oauth_records')
      .where('model', '=', model)
      .where('grant_id', '=', grantId)
      .execute()
    this.#accessTokens.forget((token) => token.payload.grantId === grantId)
  }

  /**
   * Removes a grant with every code and token issued under it (in `executor`, a transaction that records it);
   * answers whose grant it was and its client, or undefined when there was no such grant. `grantRowOnly`: the
   * provider's own revocation, which removes the codes and tokens itself at the same time (`revokeByGrantId`),
   * so that the two never delete the same rows in two transactions (a deadlock on PostgreSQL).
   */
  async deleteGrant(
    grantId: string,
    executor: Executor = this.#db,
    grantRowOnly = false,
  ): Promise<{ accountId: string; clientId: string } | undefined> {
    let query = executor.deleteFrom('oauth_records').where('grant_id', '=', grantId)
    if (grantRowOnly) query = query.where('model', '=', 'Grant')
    const rows = await query.returning(['model', 'account_id', 'payload']).execute()
    this.#accessTokens.forget((token) => token.payload.grantId === grantId)
    const grant = rows.find((row) => row.model === 'Grant')
    if (!grant?.account_id) return undefined
    return {
      accountId: grant.account_id,
      clientId: String((JSON.parse(grant.payload) as OauthPayload).clientId),
    }
  }

  /** Removes every grant of the account, with their codes and tokens. */
  async deleteGrantsOf(accountId: string): Promise<void> {
    await this.#db
      .deleteFrom('oauth_records')
      .where('grant_id', 'in', (eb) =>
        eb
          .selectFrom('oauth_records')
          .select('grant_id')
          .where('account_id', '=', accountId)
          .where('model', '=', 'Grant'),
      )
      .execute()
    this.#accessTokens.forget((token) => token.payload.accountId === accountId)
  }

  /** The account's grants, most recently used first. */
  async grantsOf(accountId: string): Promise<StoredGrant[]> {
    const rows = await this.#live()
      .select(['grant_id', 'payload', 'last_used_at'])
      .where('account_id', '=', accountId)
      .where('model', '=', 'Grant')
      .execute()
    return rows
      .map((row) => {
        const payload = JSON.parse(row.payload) as OauthPayload & { clientId: string }
        return {
          grantId: row.grant_id as string,
          clientId: payload.clientId,
          accountId,
          payload,
          lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
        }
      })
      .sort((a, b) => (b.lastUsedAt ?? 0) - (a.lastUsedAt ?? 0))
  }

  /** Clients by id, for naming them. */
  /** A client's registration, for authenticating its tokens: read as requests read, off the writer's queue. */
  async client(clientId: string): Promise<OauthPayload | undefined> {
    const [row] = await this.#findClient(hashSecret(clientId))
    return row && (JSON.parse(row.payload) as OauthPayload)
  }

  async clients(clientIds: string[], executor: Executor = this.#db): Promise<Map<string, OauthPayload>> {
    if (clientIds.length === 0) return new Map()
    const byHash = new Map(clientIds.map((id) => [hashSecret(id), id]))
    const rows = await executor
      .selectFrom('oauth_records')
      .select(['id_hash', 'payload'])
      .where('model', '=', 'Client')
      .where('id_hash', 'in', [...byHash.keys()])
      .execute()
    return new Map(
      rows.map((row) => [byHash.get(row.id_hash) as string, JSON.parse(row.payload) as OauthPayload]),
    )
  }

  /**
   * An access token whose grant still exists: revoking a grant, or a replayed code or refresh token that
   * revoked it, ends its tokens at once, whatever their own rows say.
   */
  async accessToken(token: string): Promise<StoredAccessToken | undefined> {
    const found = await this.#accessTokens.get(hashSecret(token))
    return found && found.expiresAt > Date.now() ? found : undefined
  }

  /** Records a use of the grant of `token` (an entry `accessToken` returned), which remembers it. */
  async recordGrantUse(token: StoredAccessToken, at: number): Promise<void> {
    token.grantLastUsedAt = at
    await this.#db
      .updateTable('oauth_records')
      .set({ last_used_at: at })
      .where('model', '=', 'Grant')
      .where('grant_id', '=', token.payload.grantId as string)
      .execute()
  }

  async deleteExpired(now = Date.now()): Promise<number> {
    const result = await this.#db
      .deleteFrom('oauth_records')
      .where('expires_at', '<=', now)
      .executeTakeFirst()
    const deleted = Number(result.numDeletedRows)
    // An expired grant ends its tokens, whichever they are.
    if (deleted > 0) this.#accessTokens.forget(() => true)
    return deleted
  }

  /** Records not past their expiry. */
  #live() {
    return this.#db
      .selectFrom('oauth_records')
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', Date.now())]))
  }
}
