// File requests' SQL, and their submissions'. Every read of a request joins its folder in the same query.
// Submission counts are moved atomically in SQL, in the transaction of the submission they count.
import {
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SelectQueryBuilder,
  sql,
  type Updateable,
} from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import { type Page, toPage } from '../../platform/db/pagination.ts'
import { preparePages } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import { type Folder, JOINED_FOLDER_COLUMNS, joinedFolder } from '../folders/folders.repository.ts'
import type { FileRequestsTable } from './requests.tables.ts'

/** What the owner limits a request's public page to accept (a Coffer extension); null for no limit. */
export interface RequestLimits {
  /** After this time the page accepts no more files. */
  deadlineAt: number | null
  /** Files accepted in all: submissions and uploads under way together. */
  maxFiles: number | null
  /** The largest file accepted, in bytes. */
  maxFileSize: number | null
  /** Extensions (".pdf") and MIME types ("image/*") accepted, lower case; empty for any file. */
  allowedTypes: string[]
}

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
  limits: RequestLimits
  /** Whether its owner is told of submissions by email (when the server sends email). */
  emailOwner: boolean
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
  /** The sending it came in: the files a submitter sent at once share it (null for those of before). */
  sendingId: string | null
}

/** A submission as its owner's page shows it: with whether its file still exists (it may have been deleted). */
export interface SubmissionWithFile extends Submission {
  fileExists: boolean
}

/** What the public request page needs: the owner and folder receive the uploaded file. */
export interface PublicFileRequest {
  id: string
  publicId: string
  accountId: string
  folderId: string | null
  title: string
  description: string | null
  collectEmail: boolean
  emailRequired: boolean
  isActive: boolean
  submissionCount: number
  limits: RequestLimits
  emailOwner: boolean
}

export type NewRequestRow = Omit<FileRequest, 'folder' | 'submissionCount' | 'isActive' | 'limits'> & {
  accountId: string
}

/** What an email to a request's owner tells of: the request, and the submissions since the last one. */
export interface SubmissionsToTell {
  accountId: string
  requestId: string
  title: string
  /** The oldest first. */
  submissions: Submission[]
}

/** The columns a change may set; absent ones are left as they are. */
export type RequestChanges = Pick<
  Updateable<FileRequestsTable>,
  'title' | 'description' | 'collect_email' | 'email_required' | 'is_active' | 'folder_id' | 'email_owner'
>

const LIMIT_COLUMNS = [
  'file_requests.deadline_at',
  'file_requests.max_files',
  'file_requests.max_file_size',
  'file_requests.allowed_types',
] as const

type LimitRow = Pick<FileRequestsTable, 'deadline_at' | 'max_files' | 'max_file_size' | 'allowed_types'>

const numberOrNull = (value: number | null) => (value === null ? null : Number(value))

function toLimits(row: LimitRow): RequestLimits {
  return {
    deadlineAt: numberOrNull(row.deadline_at),
    maxFiles: numberOrNull(row.max_files),
    maxFileSize: numberOrNull(row.max_file_size),
    allowedTypes: row.allowed_types === null ? [] : (JSON.parse(row.allowed_types) as string[]),
  }
}

function limitsToColumns(limits: RequestLimits): LimitRow {
  return {
    deadline_at: limits.deadlineAt,
    max_files: limits.maxFiles,
    max_file_size: limits.maxFileSize,
    allowed_types: limits.allowedTypes.length === 0 ? null : JSON.stringify(limits.allowedTypes),
  }
}

/** The columns of a PublicFileRequest. */
const PUBLIC_COLUMNS = [
  'id',
  'public_id',
  'account_id',
  'folder_id',
  'title',
  'description',
  'collect_email',
  'email_required',
  'is_active',
  'submission_count',
  'email_owner',
  'deadline_at',
  'max_files',
  'max_file_size',
  'allowed_types',
] as const

type PublicRow = Pick<Selectable<FileRequestsTable>, (typeof PUBLIC_COLUMNS)[number]>

function toPublicRequest(row: PublicRow): PublicFileRequest {
  return {
    id: row.id,
    publicId: row.public_id,
    accountId: row.account_id,
    folderId: row.folder_id,
    title: row.title,
    description: row.description,
    collectEmail: Boolean(row.collect_email),
    emailRequired: Boolean(row.email_required),
    isActive: Boolean(row.is_active),
    submissionCount: Number(row.submission_count),
    limits: toLimits(row),
    emailOwner: Boolean(row.email_owner),
  }
}

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
      'file_requests.email_owner',
      'file_requests.created_at',
      'file_requests.folder_id',
      ...LIMIT_COLUMNS,
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
    limits: toLimits(row),
    emailOwner: Boolean(row.email_owner),
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
  'sending_id',
  'created_at',
] as const

type SubmissionRow = Pick<Database['submissions'], (typeof SUBMISSION_COLUMNS)[number]>

/** SUBMISSION_COLUMNS, named by their table: the owner's list joins the files, which have columns of those names. */
const JOINED_SUBMISSION_COLUMNS = SUBMISSION_COLUMNS.map((column) => `submissions.${column}` as const)

function toSubmission(row: SubmissionRow): Submission {
  return {
    id: row.id,
    submitterName: row.submitter_name,
    submitterEmail: row.submitter_email,
    message: row.message,
    sendingId: row.sending_id,
    createdAt: Number(row.created_at),
    file: {
      id: row.file_id,
      name: row.file_name,
      contentType: row.file_content_type,
      size: Number(row.file_size),
    },
  }
}

/** Whether a row of `file_requests` is `open` as `requestStateOf` decides it, at `now`, in SQL. */
export function requestTakesFilesNow(eb: ExpressionBuilder<Database, 'file_requests'>, now: number) {
  return eb.and([
    eb('file_requests.is_active', '=', true),
    eb.or([eb('file_requests.deadline_at', 'is', null), eb('file_requests.deadline_at', '>', now)]),
    eb.or([
      eb('file_requests.max_files', 'is', null),
      eb('file_requests.submission_count', '<', eb.ref('file_requests.max_files')),
    ]),
  ])
}

export class RequestsRepository {
  readonly #db: Kysely<Database>
  readonly #listPage
  readonly #listInFolderPage
  readonly #submissionsPage
  readonly #submissionsWithFilesPage

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
    // The submission's file by its primary key, in the same statement: a page of submissions is one query.
    this.#submissionsWithFilesPage = preparePages(
      db,
      'submissions_with_files',
      'submissions',
      1,
      (requestId: string) =>
        db.kysely
          .selectFrom('submissions')
          // A file in the trash is not there to open, as a file deleted for good is not.
          .leftJoin('files', (join) =>
            join.onRef('files.id', '=', 'submissions.file_id').on('files.trashed_at', 'is', null),
          )
          .select([...JOINED_SUBMISSION_COLUMNS, 'files.id as existing_file_id'])
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
        email_owner: request.emailOwner,
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
      .returning(['folder_id', 'collect_email', 'is_active'])
      .executeTakeFirst()
    return (
      row && {
        folderId: row.folder_id,
        collectEmail: Boolean(row.collect_email),
        isActive: Boolean(row.is_active),
      }
    )
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

  /** A page of the request's submissions, each with whether its file still exists. */
  async listSubmissionsWithFiles(
    requestId: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<SubmissionWithFile>> {
    const rows = await this.#submissionsWithFilesPage([requestId], page.cursor, page.limit)
    return toPage(rows, page.limit, (row) => ({
      ...toSubmission(row),
      fileExists: row.existing_file_id !== null,
    }))
  }

  /**
   * Sets the limits of the account's request, in the caller's transaction if given; false when the account
   * has no such request.
   */
  async setLimits(
    accountId: string,
    requestId: string,
    limits: RequestLimits,
    trx?: Transaction,
  ): Promise<boolean> {
    const result = await (trx ?? this.#db)
      .updateTable('file_requests')
      // A new deadline (in the future, or none) has not passed: its passing is yet to be handled.
      .set({ ...limitsToColumns(limits), deadline_handled: false, updated_at: Date.now() })
      .where('id', '=', requestId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /**
   * Takes, in the caller's transaction, up to `limit` requests whose deadline passed by `now` and was not yet
   * handled, each with its account, the earliest deadline first, and marks them handled. The condition on
   * `deadline_handled` is written as the partial index's (migration 0023), so that both engines read only it.
   */
  async takePassedDeadlines(
    trx: Transaction,
    now: number,
    limit: number,
  ): Promise<{ accountId: string; request: FileRequest }[]> {
    const rows = await selectRequests(trx)
      .select('file_requests.account_id')
      .where(sql.ref('file_requests.deadline_handled'), '=', sql.lit(false))
      .where('file_requests.deadline_at', '<=', now)
      .orderBy('file_requests.deadline_at')
      .limit(limit)
      .execute()
    if (rows.length === 0) return []
    await trx
      .updateTable('file_requests')
      .set({ deadline_handled: true })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .execute()
    return rows.map((row) => ({ accountId: row.account_id, request: toFileRequest(row) }))
  }

  /** The request behind a public link; undefined for an unknown link, or one of a disabled account. */
  async byPublicId(publicId: string): Promise<PublicFileRequest | undefined> {
    const row = await this.#db
      .selectFrom('file_requests')
      .select(PUBLIC_COLUMNS)
      .where('public_id', '=', publicId)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('accounts')
              .select('accounts.id')
              .whereRef('accounts.id', '=', 'file_requests.account_id')
              .where('accounts.disabled_at', 'is not', null),
          ),
        ),
      )
      .executeTakeFirst()
    return row && toPublicRequest(row)
  }

  /** A request by its id, whatever its account, in the caller's transaction if given. */
  async byId(requestId: string, trx?: Transaction): Promise<PublicFileRequest | undefined> {
    const row = await (trx ?? this.#db)
      .selectFrom('file_requests')
      .select(PUBLIC_COLUMNS)
      .where('id', '=', requestId)
      .executeTakeFirst()
    return row && toPublicRequest(row)
  }

  /**
   * The request as it is now, read by a write that changes nothing: written first in a transaction, this takes
   * the row's lock (PostgreSQL; SQLite transactions already exclude each other), so that the request cannot
   * be disabled, limited or receive files from another preparation until the commit.
   */
  async lock(trx: Transaction, requestId: string): Promise<PublicFileRequest | undefined> {
    const row = await trx
      .updateTable('file_requests')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', requestId)
      .returning(PUBLIC_COLUMNS)
      .executeTakeFirst()
    return row && toPublicRequest(row)
  }

  /**
   * Counts a submission of the request; answers whether it was the last its file limit allows (the request
   * closes with it), and that limit, as this transaction leaves the count and the limit.
   */
  async countSubmission(
    trx: Transaction,
    requestId: string,
  ): Promise<{ filled: boolean; maxFiles: number | null }> {
    const row = await trx
      .updateTable('file_requests')
      .set((eb) => ({ submission_count: eb('submission_count', '+', 1) }))
      .where('id', '=', requestId)
      .returning(['submission_count', 'max_files'])
      .executeTakeFirst()
    const maxFiles = row?.max_files == null ? null : Number(row.max_files)
    return { filled: maxFiles !== null && Number(row?.submission_count) === maxFiles, maxFiles }
  }

  /** A submission whose request's owner is to be told of it by email, in the submission's transaction. */
  async queueNotice(
    trx: Transaction,
    notice: { submissionId: string; requestId: string; createdAt: number },
  ): Promise<void> {
    await trx
      .insertInto('submission_notices')
      .values({
        submission_id: notice.submissionId,
        request_id: notice.requestId,
        created_at: notice.createdAt,
      })
      .execute()
  }

  /**
   * Up to `limit` requests with submissions to tell of, whose owner was last told before `toldBefore`, or never;
   * each with its account.
   */
  async requestsToTell(
    toldBefore: number,
    limit: number,
  ): Promise<{ requestId: string; accountId: string }[]> {
    const rows = await this.#db
      .selectFrom('submission_notices')
      .innerJoin('file_requests', 'file_requests.id', 'submission_notices.request_id')
      .select(['submission_notices.request_id', 'file_requests.account_id'])
      .distinct()
      .where((eb) =>
        eb.or([eb('file_requests.noticed_at', 'is', null), eb('file_requests.noticed_at', '<', toldBefore)]),
      )
      .limit(limit)
      .execute()
    return rows.map((row) => ({ requestId: row.request_id, accountId: row.account_id }))
  }

  /**
   * Takes, in the caller's transaction, the request's submissions still to tell of, and marks its owner told at
   * `now`; undefined when there were none. A submission recorded meanwhile is left for the next email.
   */
  async takeNotices(
    trx: Transaction,
    requestId: string,
    now: number,
  ): Promise<SubmissionsToTell | undefined> {
    const taken = await trx
      .deleteFrom('submission_notices')
      .where('request_id', '=', requestId)
      .returning('submission_id')
      .execute()
    if (taken.length === 0) return undefined
    const request = await trx
      .updateTable('file_requests')
      .set({ noticed_at: now })
      .where('id', '=', requestId)
      .returning(['account_id', 'title'])
      .executeTakeFirst()
    if (!request) return undefined
    const rows = await trx
      .selectFrom('submissions')
      .select(SUBMISSION_COLUMNS)
      .where(
        'id',
        'in',
        taken.map((row) => row.submission_id),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute()
    return {
      accountId: request.account_id,
      requestId,
      title: request.title,
      submissions: rows.map(toSubmission),
    }
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
        sending_id: submission.sendingId,
        created_at: submission.createdAt,
      })
      .execute()
  }
}
