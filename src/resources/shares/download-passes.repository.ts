// The byte budgets of download passes (migration 0015): what a pass of a limited share link may still fetch.
import type { Kysely } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

/** Tries of `take` against concurrent takes of the same pass before it gives up (and admits nothing). */
const TAKE_TRIES = 8

export class DownloadPassesRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async create(pass: { passHash: string; shareId: string; bytes: number; expiresAt: number }): Promise<void> {
    await this.#db
      .insertInto('download_passes')
      .values({
        pass_hash: pass.passHash,
        share_id: pass.shareId,
        bytes_left: pass.bytes,
        expires_at: pass.expiresAt,
      })
      .execute()
  }

  /**
   * Takes up to `bytes` from the pass's budget and says how many it got: nought when none is left, or the pass
   * is unknown or expired. A compare-and-set on the amount read, so that ranges asked for at once never take
   * the same bytes twice, on either engine.
   */
  async take(passHash: string, bytes: number, now = Date.now()): Promise<number> {
    for (let i = 0; i < TAKE_TRIES; i++) {
      const row = await this.#db
        .selectFrom('download_passes')
        .select('bytes_left')
        .where('pass_hash', '=', passHash)
        .where('expires_at', '>', now)
        .executeTakeFirst()
      const left = Number(row?.bytes_left ?? 0)
      if (left <= 0) return 0
      const taken = Math.min(bytes, left)
      const result = await this.#db
        .updateTable('download_passes')
        .set({ bytes_left: left - taken })
        .where('pass_hash', '=', passHash)
        .where('bytes_left', '=', left)
        .executeTakeFirst()
      if (result.numUpdatedRows === 1n) return taken
    }
    return 0
  }

  /** Gives back bytes a range took but did not send (its client went away). */
  async giveBack(passHash: string, bytes: number): Promise<void> {
    if (bytes <= 0) return
    await this.#db
      .updateTable('download_passes')
      .set((eb) => ({ bytes_left: eb('bytes_left', '+', bytes) }))
      .where('pass_hash', '=', passHash)
      .execute()
  }

  async deleteExpired(now = Date.now()): Promise<number> {
    const result = await this.#db
      .deleteFrom('download_passes')
      .where('expires_at', '<=', now)
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
