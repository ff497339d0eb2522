// File requests' SQL, and their submissions'. Every read of a request joins its folder in the same query.
// Submission counts are moved atomically in SQL, in the transaction of the submission they count.
import type { Kysely, SelectQueryBuilder } from 'kysely'
import type { Db, Transaction } from '../db/database.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { preparePages } from '../db/read-path/prepared.ts'
import type { Database, FileRequestsTable } from '../db/schema.ts'
import { type Folder, JOINED_FOLDER_COLUMNS, joinedFolder } from '../folders/folders.repository.ts'

export interface FileRequest {
  id: string
  publicId: string
  title: string
  description: string | null
  collectEmail: boolean
  emailRequired: boolean
  isActive: boolean
  createdAt: number
  folderId: string | null
  folder: Folder | null
  submissionCount: number
}

export interface FileSummary {
  id: string
  name: string
  contentType: string
  size: number
}

export interface Submission {
  id: string
  submitterName: string | null
  submitterEmail: string | null
  message: string | null
  createdAt: number
  file: FileSummary
}

/** What the public request page needs: the owner and folder receive the uploaded file. */
export interface PublicFileRequest {
  id: string
  accountId: string
  folderId: string | null
  title: string
  description: string | null
  collectEmail: boolean
  emailRequired: boolean
  isActive: boolean
}

export type NewRequestRow = Omit<FileRequest, 'folder' | 'submissionCount' | 'isActive'> & {
  accountId: string
}

/** The columns a change may set; absent ones are left as they are. */
export type RequestChanges = Partial<
  Pick<
    FileRequestsTable,
    'title' | 'description' | 'collect_email' | 'email_required' | 'is_active' | 'folder_id'
  >
>

/** file_requests ⟕ folders, with every column a FileRequest needs. */
function selectRequests(db: Kysely<Database>) {
  return db
    .selectFrom('file_requests')
    .leftJoin('folders', 'folders.id', 'file_requests.folder_id')
    .select([
      'file_requests.id',
      'file_requests.public_id',
      'file_requests.title',
      'file_requests.description',
      'file_requests.collect_email',
      'file_requests.email_required',
      'file_requests.is_active',
      'file_requests.submission_count',
      'file_requests.created_at',
      'file_requests.folder_id',
      ...JOINED_FOLDER_COLUMNS,
    ])
}

type RequestRow =
  ReturnType<typeof selectRequests> extends SelectQueryBuilder<Database, never, infer O> ? O : never

function toFileRequest(row: RequestRow): FileRequest {
  return {
    id: row.id,
    publicId: row.public_id,
    title: row.title,
    description: row.description,
    collectEmail: Boolean(row.collect_email),
    emailRequired: Boolean(row.email_required),
    isActive: Boolean(row.is_active),
    createdAt: Number(row.created_at),
    folderId: row.folder_id,
    folder: joinedFolder(row),
    submissionCount: Number(row.submission_count),
  }
}

const SUBMISSION_COLUMNS = [
  'id',
  'file_id',
  'file_name',
  'file_content_type',
  'file_size',
  'submitter_name',
  'submitter_email',
  'message',
  'created_at',
] as const

type SubmissionRow = Pick<Database['submissions'], (typeof SUBMISSION_COLUMNS)[number]>

function toSubmission(row: SubmissionRow): Submission {
  return {
    id: row.id,
    submitterName: row.submitter_name,
    submitterEmail: row.submitter_email,
    message: row.message,
    createdAt: Number(row.created_at),
    file: {
      id: row.file_id,
      name: row.file_name,
      contentType: row.file_content_type,
      size: Number(row.file_size),
    },
  }
}

export class RequestsRepository {
  readonly #db: Kysely<Database>
  readonly #listPage
  readonly #listInFolderPage
  readonly #submissionsPage

  constructor(db: Db) {
    this.#db = db.kysely
    const inAccount = (accountId: string) =>
      selectRequests(db.kysely).where('file_requests.account_id', '=', accountId)
    this.#listPage = preparePages(db, 'requests_list', 'file_requests', 1, inAccount)
    this.#listInFolderPage = preparePages(
      db,
      'requests_list_folder',
      'file_requests',
      2,
      (accountId: string, folderId: string) =>
        inAccount(accountId).where('file_requests.folder_id', '=', folderId),
    )
    this.#submissionsPage = preparePages(db, 'submissions_list', 'submissions', 1, (requestId: string) =>
      db.kysely
        .selectFrom('submissions')
        .select(SUBMISSION_COLUMNS)
        .where('submissions.request_id', '=', requestId),
    )
  }

  async list(
    accountId: string,
    options: { cursor?: string; limit: number; folderId?: string },
  ): Promise<Page<FileRequest>> {
    const { cursor, limit, folderId } = options
    const rows = await (folderId === undefined
      ? this.#listPage([accountId], cursor, limit)
      : this.#listInFolderPage([accountId, folderId], cursor, limit))
    return toPage(rows, limit, toFileRequest)
  }

  /** The account's request, read in the caller's transaction if given. */
  async get(accountId: string, requestId: string, trx?: Transaction): Promise<FileRequest | undefined> {
    const row = await selectRequests(trx ?? this.#db)
      .where('file_requests.id', '=', requestId)
      .where('file_requests.account_id', '=', accountId)
      .executeTakeFirst()
    return row && toFileRequest(row)
  }

  async exists(accountId: string, requestId: string): Promise<boolean> {
    const row = await this.#db
      .selectFrom('file_requests')
      .select('id')
      .where('id', '=', requestId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return row !== undefined
  }

  /** Inserts an active request; a folder that does not exist (any more) is a foreign-key violation. */
  async insert(trx: Transaction, request: NewRequestRow): Promise<void> {
    await trx
      .insertInto('file_requests')
      .values({
        id: request.id,
        account_id: request.accountId,
        folder_id: request.folderId,
        public_id: request.publicId,
        title: request.title,
        description: request.description,
        collect_email: request.collectEmail,
        email_required: request.emailRequired,
        is_active: true,
        created_at: request.createdAt,
        updated_at: request.createdAt,
      })
      .execute()
  }

  /**
   * Marks the account's request as changed now and returns its folder and email setting; undefined when the
   * account has no such request. Written first in a transaction, this takes the row's lock (PostgreSQL;
   * SQLite transactions already exclude each other), so what it returns stays current until the commit.
   */
  async touch(trx: Transaction, accountId: string, requestId: string) {
    const row = await trx
      .updateTable('file_requests')
      .set({ updated_at: Date.now() })
      .where('id', '=', requestId)
      .where('account_id', '=', accountId)
      .returning(['folder_id', 'collect_email'])
      .executeTakeFirst()
    return row && { folderId: row.folder_id, collectEmail: Boolean(row.collect_email) }
  }

  async update(trx: Transaction, requestId: string, changes: RequestChanges): Promise<void> {
    if (Object.keys(changes).length === 0) return
    await trx.updateTable('file_requests').set(changes).where('id', '=', requestId).execute()
  }

  /** Moves every request of the folder to root (the folder is being deleted). */
  async moveAllToRoot(trx: Transaction, folderId: string): Promise<void> {
    await trx
      .updateTable('file_requests')
      .set({ folder_id: null })
      .where('folder_id', '=', folderId)
      .execute()
  }

  async listSubmissions(requestId: string, page: { cursor?: string; limit: number }) {
    const rows = await this.#submissionsPage([requestId], page.cursor, page.limit)
    return toPage(rows, page.limit, toSubmission)
  }

  /** The request behind a public link; undefined for an unknown link. */
  async byPublicId(publicId: string): Promise<PublicFileRequest | undefined> {
    const row = await this.#db
      .selectFrom('file_requests')
      .select([
        'id',
        'account_id',
        'folder_id',
        'title',
        'description',
        'collect_email',
        'email_required',
        'is_active',
      ])
      .where('public_id', '=', publicId)
      .executeTakeFirst()
    return (
      row && {
        id: row.id,
        accountId: row.account_id,
        folderId: row.folder_id,
        title: row.title,
        description: row.description,
        collectEmail: Boolean(row.collect_email),
        emailRequired: Boolean(row.email_required),
        isActive: Boolean(row.is_active),
      }
    )
  }

  /**
   * Counts one more submission to the request behind `publicId` and returns its settings as they are now.
   * Written first in a transaction, this takes the row's lock, so the request cannot be disabled or change
   * its email settings until the commit; a rollback takes the count back.
   */
  async countSubmission(trx: Transaction, publicId: string) {
    const row = await trx
      .updateTable('file_requests')
      .set((eb) => ({ submission_count: eb('submission_count', '+', 1) }))
      .where('public_id', '=', publicId)
      .returning(['id', 'account_id', 'is_active', 'collect_email', 'email_required'])
      .executeTakeFirst()
    return (
      row && {
        id: row.id,
        accountId: row.account_id,
        isActive: Boolean(row.is_active),
        collectEmail: Boolean(row.collect_email),
        emailRequired: Boolean(row.email_required),
      }
    )
  }

  async insertSubmission(trx: Transaction, submission: Submission & { requestId: string }): Promise<void> {
    await trx
      .insertInto('submissions')
      .values({
        id: submission.id,
        request_id: submission.requestId,
        file_id: submission.file.id,
        file_name: submission.file.name,
        file_content_type: submission.file.contentType,
        file_size: submission.file.size,
        submitter_name: submission.submitterName,
        submitter_email: submission.submitterEmail,
        message: submission.message,
        created_at: submission.createdAt,
      })
      .execute()
  }
}
