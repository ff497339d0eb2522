// Sessions' SQL: signed-in browsers, found by the SHA-256 of their cookie's secret.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import { prepare } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { Account } from './accounts.repository.ts'

/**
 * What the account stores, as the header of every page shows it (its menu's bar): its bytes (the trash included)
 * and the quota that applies to it (null: unlimited).
 */
export interface SessionUsage {
  bytes: number
  trashBytes: number
  quotaBytes: number | null
}

/** The session's account, with its usage. */
export type SessionAccount = Account & { usage: SessionUsage }

export interface StoredSession {
  id: string
  account: SessionAccount
  createdAt: number
  lastSeenAt: number
  expiresAt: number
  /** The account was disabled since the session began. */
  accountDisabled: boolean
  /** The account's webhook endpoints that Coffer disabled after failing deliveries, still disabled. */
  failedWebhooks: number
}

export class SessionsRepository {
  readonly #db: Kysely<Database>
  readonly #bySecretHash

  /**
   * `defaultQuotaBytes` (DEFAULT_QUOTA_BYTES; null: unlimited) completes the rule of the quota that applies, which
   * the session's one query reads as `QuotasService` decides it (its own, unlimited, else the default; held to it
   * by test/quotas.test.ts).
   */
  constructor(db: Db, defaultQuotaBytes: number | null = null) {
    this.#db = db.kysely
    const quotaThatApplies = sql<number | null>`case when account_quotas.unlimited then null
      else coalesce(account_quotas.quota_bytes, ${defaultQuotaBytes === null ? sql`null` : sql.lit(defaultQuotaBytes)}) end`
    // Every signed-in page view looks its session up: compiled once, read outside any transaction (Db.read).
    this.#bySecretHash = prepare(db, 'session_by_secret_hash', 1, (secretHash: string) =>
      db.kysely
        .selectFrom('sessions')
        .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
        // The account's usage for the bar of its menu: one row each, kept by triggers (quotas/, migration 0035).
        .leftJoin('account_usage', 'account_usage.account_id', 'accounts.id')
        .leftJoin('account_quotas', 'account_quotas.account_id', 'accounts.id')
        .select([
          'account_usage.bytes as usage_bytes',
          'account_usage.trash_bytes as usage_trash_bytes',
          quotaThatApplies.as('quota_bytes'),
          'sessions.id',
          'sessions.created_at',
          'sessions.last_seen_at',
          'sessions.expires_at',
          'accounts.id as account_id',
          'accounts.email',
          'accounts.created_at as account_created_at',
          'accounts.role',
          'accounts.disabled_at',
          // Shown in the header of every page (web/layout.ts), so that an owner learns of it wherever they are.
          // Counted by the index on the account's endpoints, which an account has few of.
          (eb) =>
            eb
              .selectFrom('webhook_endpoints')
              .select((count) => count.fn.countAll<number>().as('n'))
              .whereRef('webhook_endpoints.account_id', '=', 'accounts.id')
              .where('webhook_endpoints.is_active', '=', false)
              .where('webhook_endpoints.disabled_reason', 'is not', null)
              .as('failed_webhooks'),
        ])
        .where('sessions.secret_hash', '=', secretHash),
    )
  }

  async insert(session: {
    id: string
    secretHash: string
    accountId: string
    createdAt: number
    expiresAt: number
  }): Promise<void> {
    await this.#db
      .insertInto('sessions')
      .values({
        id: session.id,
        secret_hash: session.secretHash,
        account_id: session.accountId,
        created_at: session.createdAt,
        last_seen_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute()
  }

  async bySecretHash(secretHash: string): Promise<StoredSession | undefined> {
    const [row] = await this.#bySecretHash(secretHash)
    return (
      row && {
        id: row.id,
        account: {
          id: row.account_id,
          email: row.email,
          createdAt: Number(row.account_created_at),
          role: row.role,
          usage: {
            bytes: Number(row.usage_bytes ?? 0),
            trashBytes: Number(row.usage_trash_bytes ?? 0),
            quotaBytes: row.quota_bytes === null ? null : Number(row.quota_bytes),
          },
        },
        createdAt: Number(row.created_at),
        lastSeenAt: Number(row.last_seen_at),
        expiresAt: Number(row.expires_at),
        accountDisabled: row.disabled_at !== null,
        failedWebhooks: Number(row.failed_webhooks ?? 0),
      }
    )
  }

  async touch(id: string, at: number): Promise<void> {
    await this.#db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute()
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('sessions').where('id', '=', id).execute()
  }

  /** Ends the account's sessions, but for `except` when given. */
  async deleteOfAccount(accountId: string, except?: string): Promise<void> {
    let query = this.#db.deleteFrom('sessions').where('account_id', '=', accountId)
    if (except) query = query.where('id', '!=', except)
    await query.execute()
  }

  /** Removes sessions past their absolute end or idle since `idleBefore`. */
  async deleteExpired(now: number, idleBefore: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
