// The mail outbox: messages written in the caller's transaction (so a message goes out for a change that
// committed, and for no other), then sent and retried by the mail sender (mail-sender.job.ts).
import type { Kysely } from 'kysely'
import type { Db, Executor, Transaction } from '../db/database.ts'
import type { Database } from '../db/schema.ts'
import { newId } from '../ids.ts'

/** A message as Coffer writes it: plain text, to one address. */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** Queues a message in the caller's transaction: what services that write email are handed (wiring.ts). */
export type QueueMail = (trx: Transaction, message: MailMessage) => Promise<unknown>

export interface QueuedMessage extends MailMessage {
  id: string
  attempts: number
  createdAt: number
}

export class MailRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** Queues a message, due at once, in the caller's transaction. */
  async enqueue(executor: Executor, message: MailMessage): Promise<string> {
    const now = Date.now()
    const id = newId('msg', now)
    await executor
      .insertInto('mail_outbox')
      .values({
        id,
        to_address: message.to,
        subject: message.subject,
        text_body: message.text,
        state: 'pending',
        attempts: 0,
        next_attempt_at: now,
        last_error: null,
        created_at: now,
        updated_at: now,
      })
      .execute()
    return id
  }

  /** The pending messages due by `now`, the earliest first. */
  async due(now: number, limit: number): Promise<QueuedMessage[]> {
    const rows = await this.#db
      .selectFrom('mail_outbox')
      .select(['id', 'to_address', 'subject', 'text_body', 'attempts', 'created_at'])
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute()
    return rows.map((row) => ({
      id: row.id,
      to: row.to_address,
      subject: row.subject,
      text: row.text_body,
      attempts: Number(row.attempts),
      createdAt: Number(row.created_at),
    }))
  }

  /**
   * Sent: the body is dropped, since it may hold a secret (a password reset link) that must not stay stored
   * once it has left; the row says to whom, what about and when.
   */
  async markSent(id: string, now: number): Promise<void> {
    await this.#db
      .updateTable('mail_outbox')
      .set((eb) => ({
        state: 'sent',
        attempts: eb('attempts', '+', 1),
        text_body: '',
        last_error: null,
        updated_at: now,
      }))
      .where('id', '=', id)
      .execute()
  }

  /** An attempt failed: tried again at `retryAt`, or given up when there is none (its body dropped). */
  async markFailed(id: string, error: string, now: number, retryAt: number | undefined): Promise<void> {
    await this.#db
      .updateTable('mail_outbox')
      .set((eb) => ({
        state: retryAt === undefined ? 'failed' : 'pending',
        attempts: eb('attempts', '+', 1),
        // Given up: the body goes as a sent one's does.
        ...(retryAt === undefined ? { text_body: '' } : {}),
        next_attempt_at: retryAt ?? now,
        last_error: error.slice(0, 1000),
        updated_at: now,
      }))
      .where('id', '=', id)
      .execute()
  }

  /** Forgets the messages sent or given up before `before`. */
  async purge(before: number): Promise<void> {
    await this.#db
      .deleteFrom('mail_outbox')
      .where('state', '!=', 'pending')
      .where('created_at', '<', before)
      .execute()
  }
}
