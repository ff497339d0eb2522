// The admin's reads of the server's accounts: a page of them, newest first, optionally those whose email holds a
// text. Emails are stored normalised (lowercase), so a search lowercases its text and compares as it is. An
// instance has people, not millions: a search reads the accounts' table, which is small.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { AccountRole } from '../accounts/accounts.tables.ts'

/** An account as the admin's pages show it. */
export interface ManagedAccount {
  id: string
  email: string
  role: AccountRole
  createdAt: number
  disabledAt: number | null
  lastSignInAt: number | null
  /** When an admin deleted it: its files are being purged, then it goes. */
  deletingAt: number | null
  hasPassword: boolean
}

const COLUMNS = [
  'id',
  'email',
  'role',
  'created_at',
  'disabled_at',
  'last_sign_in_at',
  'deleting_at',
  'password_hash',
] as const

const toManaged = (row: {
  id: string
  email: string
  role: AccountRole
  created_at: number
  disabled_at: number | null
  last_sign_in_at: number | null
  deleting_at: number | null
  password_hash: string | null
}): ManagedAccount => ({
  id: row.id,
  email: row.email,
  role: row.role,
  createdAt: Number(row.created_at),
  disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
  lastSignInAt: row.last_sign_in_at === null ? null : Number(row.last_sign_in_at),
  deletingAt: row.deleting_at === null ? null : Number(row.deleting_at),
  hasPassword: row.password_hash !== null,
})

/** `%`, `_` and the escape itself, taken literally by LIKE. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

export class AdminRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** Accounts newest first (ids sort by creation time), after the id `after`; `limit + 1` read to know of more. */
  async accounts(query: { search?: string; after?: string; limit: number }): Promise<ManagedAccount[]> {
    let select = this.#db
      .selectFrom('accounts')
      .select(COLUMNS)
      .orderBy('id', 'desc')
      .limit(query.limit + 1)
    if (query.after !== undefined) select = select.where('id', '<', query.after)
    if (query.search) {
      const pattern = `%${likeLiteral(query.search.toLowerCase())}%`
      select = select.where(sql<boolean>`email like ${pattern} escape '\\'`)
    }
    return (await select.execute()).map(toManaged)
  }

  async account(accountId: string): Promise<ManagedAccount | undefined> {
    const row = await this.#db
      .selectFrom('accounts')
      .select(COLUMNS)
      .where('id', '=', accountId)
      .executeTakeFirst()
    return row && toManaged(row)
  }
}
