// Quotas' SQL: an account's usage (one row, kept by the triggers of migration 0035) and what an admin set.
import type { Kysely } from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import type { Engine } from '../../platform/db/engine.ts'
import type { Database } from '../../platform/db/schema.ts'

/** An account's stored files and bytes, the trash included, and what of them is in the trash. */
export interface StoredUsage {
  files: number
  bytes: number
  trashFiles: number
  trashBytes: number
}

/** What an admin set for an account; `quotaBytes` null and `unlimited` false: the server's default applies. */
export interface QuotaSettings {
  quotaBytes: number | null
  unlimited: boolean
  maxFileBytes: number | null
}

export const NO_USAGE: StoredUsage = { files: 0, bytes: 0, trashFiles: 0, trashBytes: 0 }
export const DEFAULT_SETTINGS: QuotaSettings = { quotaBytes: null, unlimited: false, maxFileBytes: null }

const nullableNumber = (value: number | string | null) => (value === null ? null : Number(value))

export class QuotasRepository {
  readonly #db: Kysely<Database>
  readonly #engine: Engine

  constructor(db: Db) {
    this.#db = db.kysely
    this.#engine = db.engine
  }

  /** The usage and settings of each of `accountIds`, in one read; an account without either gets the defaults. */
  async of(
    accountIds: readonly string[],
    executor: Kysely<Database> | Transaction = this.#db,
  ): Promise<Map<string, { usage: StoredUsage; settings: QuotaSettings }>> {
    const found = new Map<string, { usage: StoredUsage; settings: QuotaSettings }>()
    if (accountIds.length === 0) return found
    const rows = await executor
      .selectFrom('accounts')
      .leftJoin('account_usage', 'account_usage.account_id', 'accounts.id')
      .leftJoin('account_quotas', 'account_quotas.account_id', 'accounts.id')
      .select([
        'accounts.id',
        'account_usage.files',
        'account_usage.bytes',
        'account_usage.trash_files',
        'account_usage.trash_bytes',
        'account_quotas.quota_bytes',
        'account_quotas.unlimited',
        'account_quotas.max_file_bytes',
      ])
      .where('accounts.id', 'in', [...new Set(accountIds)])
      .execute()
    for (const row of rows) {
      found.set(row.id, {
        usage: {
          files: Number(row.files ?? 0),
          bytes: Number(row.bytes ?? 0),
          trashFiles: Number(row.trash_files ?? 0),
          trashBytes: Number(row.trash_bytes ?? 0),
        },
        settings: {
          quotaBytes: nullableNumber(row.quota_bytes),
          // SQLite answers 0 or 1.
          unlimited: Boolean(row.unlimited),
          maxFileBytes: nullableNumber(row.max_file_bytes),
        },
      })
    }
    return found
  }

  /**
   * Holds the account's row until the transaction ends, so that the preparations of one account check its
   * quota one at a time: on PostgreSQL `for no key update` (which, unlike `for update`, does not hold up the
   * inserts of rows that refer to the account); on SQLite the single writer already runs them one at a time.
   * False if the account does not exist.
   */
  async lockAccount(trx: Transaction, accountId: string): Promise<boolean> {
    let query = trx.selectFrom('accounts').select('id').where('id', '=', accountId)
    if (this.#engine === 'postgres') query = query.forNoKeyUpdate()
    return (await query.executeTakeFirst()) !== undefined
  }

  /** Writes what an admin set for the account. */
  async set(accountId: string, settings: QuotaSettings, now: number, trx: Transaction): Promise<void> {
    const values = {
      quota_bytes: settings.quotaBytes,
      unlimited: settings.unlimited,
      max_file_bytes: settings.maxFileBytes,
      updated_at: now,
    }
    await trx
      .insertInto('account_quotas')
      .values({ account_id: accountId, ...values })
      .onConflict((oc) => oc.column('account_id').doUpdateSet(values))
      .execute()
  }
}
