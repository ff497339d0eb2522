// Invitations' SQL: single-use links an admin makes, of which only the hash of the secret is kept.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { AccountRole } from './accounts.tables.ts'

export interface Invitation {
  id: string
  /** The address it was sent to; null when the admin copied the link. */
  email: string | null
  role: AccountRole
  invitedBy: string | null
  createdAt: number
  expiresAt: number
}

const COLUMNS = ['id', 'email', 'role', 'invited_by', 'created_at', 'expires_at'] as const

const toInvitation = (row: {
  id: string
  email: string | null
  role: AccountRole
  invited_by: string | null
  created_at: number
  expires_at: number
}): Invitation => ({
  id: row.id,
  email: row.email,
  role: row.role,
  invitedBy: row.invited_by,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
})

export class InvitationsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async insert(executor: Executor, invitation: Invitation & { secretHash: string }): Promise<void> {
    await executor
      .insertInto('invitations')
      .values({
        id: invitation.id,
        secret_hash: invitation.secretHash,
        email: invitation.email,
        role: invitation.role,
        invited_by: invitation.invitedBy,
        created_at: invitation.createdAt,
        expires_at: invitation.expiresAt,
      })
      .execute()
  }

  /** The invitation the secret opens: not used, not expired. */
  async open(secretHash: string, now: number): Promise<Invitation | undefined> {
    const row = await this.#db
      .selectFrom('invitations')
      .select(COLUMNS)
      .where('secret_hash', '=', secretHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return row && toInvitation(row)
  }

  /** Marks the invitation used by `accountId`, in `trx`; false when it was used (or ended) meanwhile. */
  async take(trx: Executor, invitationId: string, accountId: string, now: number): Promise<boolean> {
    const result = await trx
      .updateTable('invitations')
      .set({ used_at: now, used_by: accountId })
      .where('id', '=', invitationId)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** The invitations not used yet, newest first, the expired ones included (the admin's list says so). */
  async unused(limit: number): Promise<Invitation[]> {
    const rows = await this.#db
      .selectFrom('invitations')
      .select(COLUMNS)
      .where('used_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute()
    return rows.map(toInvitation)
  }

  /** The invitation deleted (its address and role, which the audit log records); undefined when there was none. */
  async delete(
    invitationId: string,
    executor: Executor = this.#db,
  ): Promise<{ email: string | null; role: AccountRole } | undefined> {
    return executor
      .deleteFrom('invitations')
      .where('id', '=', invitationId)
      .where('used_at', 'is', null)
      .returning(['email', 'role'])
      .executeTakeFirst()
  }

  /** Forgets the invitations that ended unused before `before`. */
  async deleteExpired(before: number): Promise<void> {
    await this.#db
      .deleteFrom('invitations')
      .where('used_at', 'is', null)
      .where('expires_at', '<', before)
      .execute()
  }
}
