// Helpers shared by the files tests (files, files-search, files-changes, files-read-path): the File the API
// must return, folders and shares made the quick way, many files written straight to the database, and a
// listing walked page by page.
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import type { App } from '../../src/app.ts'
import { newId, newPublicId } from '../../src/platform/ids.ts'
import type { StoredFile } from '../../src/resources/files/files.repository.ts'
import { NameIndex } from '../../src/resources/files/search/name-index.repository.ts'
import { type ApiResponse, call, type TestAccount, type TestContext } from './harness.ts'

export const iso = (ms: number) => new Date(ms).toISOString()

/** The File the API must return for `file` (not an image: no preview), given its folder and share as shown. */
export function fileJson(
  file: Pick<StoredFile, 'id' | 'name' | 'contentType' | 'size' | 'createdAt'>,
  folder: Record<string, unknown> | null = null,
  share: Record<string, unknown> | null = null,
) {
  return {
    id: file.id,
    name: file.name,
    contentType: file.contentType,
    size: file.size,
    createdAt: iso(file.createdAt),
    share,
    folderId: (folder?.id as string | undefined) ?? null,
    folder,
    previewUrl: null,
  }
}

/**
 * Inserts files number `from` to `to` of the account, named `${prefix}${n}${suffix}` and created at n ms
 * after the epoch (so older than any file made through the API), straight into the table: fast enough for
 * tens of thousands.
 */
export async function insertFiles(
  c: TestContext,
  accountId: string,
  [from, to]: [number, number],
  [prefix, suffix]: [string, string],
  folderId: string | null = null,
  /** False leaves the full chunks for the index's job to write, as after a crash. */
  fold = true,
): Promise<void> {
  await sql`with recursive seq(n) as (
      select cast(${from} as integer) union all select n + 1 from seq where n < cast(${to} as integer))
    insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at)
    select 'fil_' || ${accountId} || '_' || n, ${accountId}, ${folderId}, ${prefix} || n || ${suffix}, 'text/plain', 1,
           'k/' || ${accountId} || '/' || n, null, n, n
    from seq`.execute(c.db.kysely)
  await sql`analyze`.execute(c.db.kysely)
  // Numbered for the name index among the account's files, by their times, and its full chunks written: after
  // the account's files when they are all newer (the index keeps what it holds), else all again.
  const names = new NameIndex(c.db)
  const { last_file_at: last } = await c.db.kysely
    .selectFrom('accounts')
    .select('last_file_at')
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow()
  if (from > Number(last)) {
    await sql`update files set seq = numbered.n
      from (select id, (select file_seq from accounts where id = ${accountId})
                       + row_number() over (order by created_at, id) - 1 as n
            from files where account_id = ${accountId} and seq is null) as numbered
      where files.id = numbered.id`.execute(c.db.kysely)
    await sql`update accounts set file_seq = file_seq + ${to - from + 1}, last_file_at = ${to}
      where id = ${accountId}`.execute(c.db.kysely)
  } else {
    await names.rebuild(accountId)
  }
  // Several chunks to a transaction, as the server's job writes them.
  if (fold) await names.foldFull(accountId, 4)
}

export async function createFolder(app: App, account: TestAccount, name: string) {
  const res = await call(app, 'POST', '/api/v1/folders', { token: account.token, body: { name } })
  assert.equal(res.status, 201)
  return res.body.data as {
    id: string
    name: string
    createdAt: string
    fileCount: number
    requestCount: number
  }
}

export async function folderCounts(app: App, account: TestAccount, folderId: string): Promise<number> {
  const res = await call(app, 'GET', `/api/v1/folders/${folderId}`, { token: account.token })
  assert.equal(res.status, 200)
  return res.body.data.fileCount
}

export async function insertShare(
  c: TestContext,
  accountId: string,
  fileId: string,
  values: { isActive: boolean; expiresAt: number | null; viewCount: number; downloadCount: number },
) {
  const now = Date.now()
  const row = {
    id: newId('shr', now),
    account_id: accountId,
    file_id: fileId,
    public_id: newPublicId(),
    is_active: values.isActive,
    expires_at: values.expiresAt,
    view_count: values.viewCount,
    download_count: values.downloadCount,
    created_at: now,
    updated_at: now,
  }
  await c.db.kysely.insertInto('shares').values(row).execute()
  return row
}

/** Files as the list orders them: newest first, then id descending. */
export const newestFirst = <T extends { createdAt: number; id: string }>(files: T[]) =>
  [...files].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))

/** Every id of a listing, page by page; fails if a page repeats an id. */
export async function walk(app: App, token: string, params: string, limit: number): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const url: string = `/api/v1/files?limit=${limit}${params}${cursor ? `&cursor=${cursor}` : ''}`
    const res: ApiResponse = await call(app, 'GET', url, { token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(res.body.data.length <= limit)
    ids.push(...res.body.data.map((f: { id: string }) => f.id))
    cursor = res.body.pagination.nextCursor
  } while (cursor)
  assert.equal(new Set(ids).size, ids.length, 'a file was listed twice')
  return ids
}
