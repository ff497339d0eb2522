// Upload intents' SQL, and that of the blobs staged for them. Every state change is one conditional UPDATE
// (`where state = ...`), so concurrent requests and several processes agree on who moved an intent.
import { type Kysely, type Selectable, sql } from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'
import type { UploadIntentsTable, UploadState } from './uploads.tables.ts'

export type IntentRow = Selectable<UploadIntentsTable>

export interface StagedBlob {
  /** The intent it is staged for. */
  intentId: string
  key: string
  /** The blob of a multipart upload: the upload's id as the client knows it, and as the BlobStore does. */
  uploadId: string | null
  storeUploadId: string | null
  size: number | null
  sha256: string | null
  crc32: number | null
}

/** A staged blob's bytes as written: their size, and their digests unless the store joined them unread (S3). */
export interface StoredBytes {
  size: number
  sha256: string | null
  crc32: number | null
}

export const toIntent = (row: IntentRow): IntentRow => ({
  ...row,
  size: Number(row.size),
  expires_at: Number(row.expires_at),
  stored_size: row.stored_size === null ? null : Number(row.stored_size),
  crc32: row.crc32 === null ? null : Number(row.crc32),
  stored_at: row.stored_at === null ? null : Number(row.stored_at),
  lease_until: row.lease_until === null ? null : Number(row.lease_until),
  created_at: Number(row.created_at),
  updated_at: Number(row.updated_at),
})

const STAGED_COLUMNS = [
  'intent_id',
  'key',
  'upload_id',
  'store_upload_id',
  'size',
  'sha256',
  'crc32',
] as const

function toStagedBlob(row: {
  intent_id: string
  key: string
  upload_id: string | null
  store_upload_id: string | null
  size: number | null
  sha256: string | null
  crc32: number | null
}): StagedBlob {
  return {
    intentId: row.intent_id,
    key: row.key,
    uploadId: row.upload_id,
    storeUploadId: row.store_upload_id,
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
    crc32: row.crc32 === null ? null : Number(row.crc32),
  }
}

export class UploadsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** A folder that does not exist (any more) is a foreign-key violation. */
  async insertIntents(trx: Transaction, rows: IntentRow[]): Promise<void> {
    await trx.insertInto('upload_intents').values(rows).execute()
  }

  /**
   * The bytes the account's uploads under way declared, which its quota holds for them (quotas/): those that
   * may still take bytes (uploading, even past their grant's expiry until it is swept: a transfer under way may
   * still finish) and those being processed whose file is not made yet. Read by the partial index of migration
   * 0035 (its condition written out, so that SQLite's planner sees it), in the caller's transaction.
   */
  async reservedBytes(trx: Transaction, accountId: string): Promise<number> {
    const row = await trx
      .selectFrom('upload_intents')
      .select((eb) => eb.fn.sum<number | string | null>('size').as('bytes'))
      .where('account_id', '=', accountId)
      .where(sql<boolean>`state in ('uploading', 'processing')`)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb.selectFrom('files').select('files.id').whereRef('files.id', '=', 'upload_intents.file_id'),
          ),
        ),
      )
      .executeTakeFirstOrThrow()
    return Number(row.bytes ?? 0)
  }

  /**
   * Uploads prepared for a file request that may still become submissions: those still taking bytes under
   * a grant that has not expired, and those being processed.
   */
  async underWayForRequest(trx: Transaction, requestId: string, now: number): Promise<number> {
    const row = await trx
      .selectFrom('upload_intents')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('request_id', '=', requestId)
      .where((eb) =>
        eb.or([
          eb('state', '=', 'processing'),
          eb.and([eb('state', '=', 'uploading'), eb('expires_at', '>', now)]),
        ]),
      )
      .executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /**
   * The uploads prepared from a client address on the public pages (of one file request, `requestId`, if
   * given) that may still take bytes (uploading, grant not expired), and when the first of them expires.
   */
  async pendingFromClient(
    trx: Transaction,
    client: string,
    now: number,
    requestId?: string,
  ): Promise<{ count: number; firstExpiry: number | null }> {
    let query = trx
      .selectFrom('upload_intents')
      .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('expires_at').as('first_expiry')])
      .where('client', '=', client)
      .where('expires_at', '>', now)
      .where('state', '=', 'uploading')
    if (requestId !== undefined) query = query.where('request_id', '=', requestId)
    const row = await query.executeTakeFirstOrThrow()
    return {
      count: Number(row.count),
      firstExpiry: row.first_expiry === null ? null : Number(row.first_expiry),
    }
  }

  /** Moves a grant's expiry later, to `until`, if it is still uploading and has not expired. */
  async extendGrant(id: string, until: number, now: number): Promise<void> {
    await this.#db
      .updateTable('upload_intents')
      .set({ expires_at: until })
      .where('id', '=', id)
      .where('state', '=', 'uploading')
      .where('expires_at', '>', now)
      .where('expires_at', '<', until)
      .execute()
  }

  /** The intents of `ids` that exist, in one read. */
  async intents(ids: string[]): Promise<IntentRow[]> {
    if (ids.length === 0) return []
    const rows = await this.#db.selectFrom('upload_intents').selectAll().where('id', 'in', ids).execute()
    return rows.map(toIntent)
  }

  async intent(id: string): Promise<IntentRow | undefined> {
    const row = await this.#db
      .selectFrom('upload_intents')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toIntent(row)
  }

  /** Moves an intent from `from` to `error`; false if it was no longer in `from`. */
  async fail(id: string, from: UploadState, message: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('upload_intents')
      .set({ state: 'error', error: message, lease_until: null, client: null, updated_at: Date.now() })
      .where('id', '=', id)
      .where('state', '=', from)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * Adopts the staged final blob `key` as the intent's file: uploading → processing, in one transaction with
   * forgetting the staging record (the blob now belongs to the intent). False if the intent was no longer
   * uploading or the blob was not staged for it.
   */
  async adoptStoredBlob(intentId: string, key: string, fileId: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const staged = await trx
        .selectFrom('upload_blobs')
        .select(['size', 'sha256', 'crc32', 'upload_id'])
        .where('key', '=', key)
        .where('intent_id', '=', intentId)
        .executeTakeFirst()
      if (!staged || staged.size === null) return false
      const now = Date.now()
      const moved = await trx
        .updateTable('upload_intents')
        .set({
          state: 'processing',
          client: null,
          file_id: fileId,
          stored_size: Number(staged.size),
          sha256: staged.sha256,
          crc32: staged.crc32,
          adopted_upload_id: staged.upload_id,
          stored_at: now,
          updated_at: now,
        })
        .where('id', '=', intentId)
        .where('state', '=', 'uploading')
        .executeTakeFirst()
      if (moved.numUpdatedRows === 0n) return false
      await trx.deleteFrom('upload_blobs').where('key', '=', key).execute()
      return true
    })
  }

  /** Takes the processing of an intent for `ms`, unless another process holds it. */
  async lease(id: string, ms: number): Promise<boolean> {
    const now = Date.now()
    const result = await this.#db
      .updateTable('upload_intents')
      .set({ lease_until: now + ms })
      .where('id', '=', id)
      .where('state', '=', 'processing')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Ends every lease: for a process that knows no other can hold one (the embedded mode, at start). */
  async releaseLeases(): Promise<void> {
    await this.#db
      .updateTable('upload_intents')
      .set({ lease_until: null })
      .where('state', '=', 'processing')
      .where('lease_until', 'is not', null)
      .execute()
  }

  async renewLease(id: string, ms: number): Promise<void> {
    await this.#db
      .updateTable('upload_intents')
      .set({ lease_until: Date.now() + ms })
      .where('id', '=', id)
      .where('state', '=', 'processing')
      .execute()
  }

  /**
   * Ends processing, in the transaction that records what processing made. Done after the file exists, so a
   * crash in between leaves an intent that processing resumes and finishes.
   */
  async markComplete(trx: Transaction, id: string): Promise<void> {
    await trx
      .updateTable('upload_intents')
      .set({ state: 'complete', lease_until: null, updated_at: Date.now() })
      .where('id', '=', id)
      .where('state', '=', 'processing')
      .execute()
  }

  async expiredUploading(now: number, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('upload_intents')
      .select('id')
      .where('state', '=', 'uploading')
      .where('expires_at', '<=', now)
      .limit(limit)
      .execute()
    return rows.map((r) => r.id)
  }

  async unleasedProcessing(now: number, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('upload_intents')
      .select('id')
      .where('state', '=', 'processing')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .limit(limit)
      .execute()
    return rows.map((r) => r.id)
  }

  // --- staged blobs -------------------------------------------------------------------------------------

  /**
   * Records a blob before its first byte is written; for a multipart upload's blob, once the upload exists in
   * the BlobStore and before any part is written to it.
   */
  async stage(key: string, intentId: string, multipart?: { uploadId: string; storeUploadId: string }) {
    await this.#db
      .insertInto('upload_blobs')
      .values({
        key,
        intent_id: intentId,
        upload_id: multipart?.uploadId ?? null,
        store_upload_id: multipart?.storeUploadId ?? null,
        size: null,
        sha256: null,
        crc32: null,
        completing_at: null,
        created_at: Date.now(),
      })
      .execute()
  }

  /** Records that a completion is about to have the store join the parts of the multipart upload of `key`. */
  async startCompleting(key: string): Promise<void> {
    await this.#db
      .updateTable('upload_blobs')
      .set({ completing_at: Date.now() })
      .where('key', '=', key)
      .execute()
  }

  /**
   * Multipart blobs whose completion began before `before` and whose intent still takes bytes: completions that
   * failed half-way (the store may have joined the parts), or that a client abandoned after a failure.
   */
  async stalledCompletions(before: number, limit: number): Promise<StagedBlob[]> {
    const rows = await this.#db
      .selectFrom('upload_blobs')
      .innerJoin('upload_intents', 'upload_intents.id', 'upload_blobs.intent_id')
      .select(STAGED_COLUMNS.map((column) => `upload_blobs.${column}` as const))
      .where('upload_blobs.completing_at', '<', before)
      .where('upload_blobs.store_upload_id', 'is not', null)
      .where('upload_intents.state', '=', 'uploading')
      .limit(limit)
      .execute()
    return rows.map(toStagedBlob)
  }

  /**
   * Marks a staged blob as written, only while its intent still accepts bytes: false means the intent ended
   * meanwhile and the caller must remove the blob itself (the sweeper may already have passed).
   */
  async staged(key: string, intentId: string, { size, sha256, crc32 }: StoredBytes): Promise<boolean> {
    const result = await this.#db
      .updateTable('upload_blobs')
      .set({ size, sha256, crc32 })
      .where('key', '=', key)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('upload_intents')
            .select('id')
            .where('id', '=', intentId)
            .where('state', '=', 'uploading'),
        ),
      )
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  async stillStaged(keys: string[]): Promise<string[]> {
    if (keys.length === 0) return []
    const rows = await this.#db.selectFrom('upload_blobs').select('key').where('key', 'in', keys).execute()
    return rows.map((r) => r.key)
  }

  async unstage(keys: string[]): Promise<void> {
    if (keys.length === 0) return
    await this.#db.deleteFrom('upload_blobs').where('key', 'in', keys).execute()
  }

  async stagedBlobs(intentId: string): Promise<StagedBlob[]> {
    const rows = await this.#db
      .selectFrom('upload_blobs')
      .select(STAGED_COLUMNS)
      .where('intent_id', '=', intentId)
      .orderBy('created_at')
      .execute()
    return rows.map(toStagedBlob)
  }

  /** The blob of the intent's multipart upload `uploadId` (the client's id), if it is still staged. */
  async multipartUpload(intentId: string, uploadId: string): Promise<StagedBlob | undefined> {
    const row = await this.#db
      .selectFrom('upload_blobs')
      .select(STAGED_COLUMNS)
      .where('intent_id', '=', intentId)
      .where('upload_id', '=', uploadId)
      .where('store_upload_id', 'is not', null)
      .executeTakeFirst()
    return row && toStagedBlob(row)
  }

  /** Intents that ended but still have staged blobs (a process died while cleaning up), or no longer exist. */
  async leftoverIntents(limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('upload_blobs')
      .leftJoin('upload_intents', 'upload_intents.id', 'upload_blobs.intent_id')
      .select('upload_blobs.intent_id')
      .where((eb) =>
        eb.or([eb('upload_intents.id', 'is', null), eb('upload_intents.state', 'in', ['complete', 'error'])]),
      )
      .groupBy('upload_blobs.intent_id')
      .limit(limit)
      .execute()
    return rows.map((r) => r.intent_id)
  }
}
