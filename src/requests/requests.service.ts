// File requests: public pages that collect files from outside submitters, and the submissions they receive.
// Every read joins the folder in the same query. Folder request counts and submission counts are columns,
// moved atomically in SQL in the same transaction as the change they count.
import type { Kysely, SelectQueryBuilder, Updateable } from 'kysely'
import type { Config } from '../config.ts'
import { isForeignKeyViolation } from '../db/errors.ts'
import { type Page, toPage } from '../db/pagination.ts'
import { preparePages } from '../db/prepared.ts'
import type { Database, FileRequestsTable } from '../db/schema.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import {
  adjustFolderCount,
  assertOwnedFolder,
  type Folder,
  JOINED_FOLDER_COLUMNS,
  joinedFolder,
} from '../folders/folders.service.ts'
import { newId, newPublicId } from '../ids.ts'
import type { ServiceDeps } from '../services.ts'

export interface FileRequest {
  id: string
  publicId: string
  publicUrl: string
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

export interface NewFileRequest {
  title: string
  description?: string
  collectEmail?: boolean
  emailRequired?: boolean
  folderId?: string | null
}

/** Absent properties are left unchanged; `description: null` clears, `folderId: null` moves to root. */
export interface FileRequestPatch {
  title?: string
  description?: string | null
  collectEmail?: boolean
  emailRequired?: boolean
  isActive?: boolean
  folderId?: string | null
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

export interface NewSubmission {
  /** The public ID of the request link (`/r/{publicId}`). */
  publicId: string
  /** A file of the request's owner, already stored. */
  fileId: string
  submitterName?: string | null
  submitterEmail?: string | null
  message?: string | null
}

/** Bounds of what a submitter types on the public page (the spec leaves them open). */
export const SUBMISSION_LIMITS = { name: 100, email: 254, message: 1000 } as const

// The pattern of ajv-formats' `email` format, which the Submission schema declares for submitterEmail.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

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

function cleanTitle(title: string): string {
  const trimmed = title.trim()
  if (trimmed.length < 3) {
    throw invalid('The request body "title" must be at least 3 characters long, not counting outer spaces.')
  }
  return trimmed
}

const contradictoryEmail = () =>
  invalid(
    'The request body sets "emailRequired" to true and "collectEmail" to false: an email that is not collected cannot be required.',
    'Set "collectEmail" to true, or "emailRequired" to false.',
  )

/** Trims what a submitter typed; blank means not given. */
function submitted(value: string | null | undefined, field: string, max: number): string | null {
  const trimmed = value?.trim() ?? ''
  if (trimmed.length === 0) return null
  if (trimmed.length > max) throw invalid(`The ${field} must be at most ${max} characters long.`)
  return trimmed
}

const requestNotFound = (requestId: string) => notFound(`File request ${requestId}`)

export class RequestsService {
  readonly #db: Kysely<Database>
  readonly #publicUrl: string
  readonly #listPage
  readonly #listInFolderPage
  readonly #submissionsPage

  constructor(deps: Pick<ServiceDeps, 'db'> & { config: Pick<Config, 'publicUrl'> }) {
    this.#db = deps.db.kysely
    this.#publicUrl = deps.config.publicUrl
    const inAccount = (accountId: string) =>
      selectRequests(deps.db.kysely).where('file_requests.account_id', '=', accountId)
    this.#listPage = preparePages(deps.db, 'requests_list', 'file_requests', 1, inAccount)
    this.#listInFolderPage = preparePages(
      deps.db,
      'requests_list_folder',
      'file_requests',
      2,
      (accountId: string, folderId: string) =>
        inAccount(accountId).where('file_requests.folder_id', '=', folderId),
    )
    this.#submissionsPage = preparePages(deps.db, 'submissions_list', 'submissions', 1, (requestId: string) =>
      deps.db.kysely
        .selectFrom('submissions')
        .select(SUBMISSION_COLUMNS)
        .where('submissions.request_id', '=', requestId),
    )
  }

  #toFileRequest(row: RequestRow): FileRequest {
    return {
      id: row.id,
      publicId: row.public_id,
      publicUrl: `${this.#publicUrl}/r/${row.public_id}`,
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

  async #get(db: Kysely<Database>, accountId: string, requestId: string): Promise<FileRequest> {
    const row = await selectRequests(db)
      .where('file_requests.id', '=', requestId)
      .where('file_requests.account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) throw requestNotFound(requestId)
    return this.#toFileRequest(row)
  }

  /** The account's requests, newest first; `folderId` (an owned folder, else 404) narrows to one folder. */
  async list(
    accountId: string,
    options: { cursor?: string; limit: number; folderId?: string },
  ): Promise<Page<FileRequest>> {
    const { cursor, limit, folderId } = options
    if (folderId !== undefined) await assertOwnedFolder(this.#db, accountId, folderId)
    const rows = await (folderId === undefined
      ? this.#listPage([accountId], cursor, limit)
      : this.#listInFolderPage([accountId, folderId], cursor, limit))
    return toPage(rows, limit, (row) => this.#toFileRequest(row))
  }

  /** The account's request; another account's request is "not found". */
  async get(accountId: string, requestId: string): Promise<FileRequest> {
    return this.#get(this.#db, accountId, requestId)
  }

  /** Creates an active request; the folder, if any, must be owned and its request count moves with it. */
  async create(accountId: string, input: NewFileRequest): Promise<FileRequest> {
    const title = cleanTitle(input.title)
    const collectEmail = input.collectEmail ?? true
    if (!collectEmail && input.emailRequired === true) throw contradictoryEmail()
    const folderId = input.folderId ?? null
    const now = Date.now()
    const id = newId('req', now)
    try {
      return await this.#db.transaction().execute(async (trx) => {
        if (folderId !== null) await assertOwnedFolder(trx, accountId, folderId)
        await trx
          .insertInto('file_requests')
          .values({
            id,
            account_id: accountId,
            folder_id: folderId,
            public_id: newPublicId(),
            title,
            description: input.description ?? null,
            collect_email: collectEmail,
            email_required: collectEmail && (input.emailRequired ?? true),
            is_active: true,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await adjustFolderCount(trx, folderId, 'request_count', 1)
        return this.#get(trx, accountId, id)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${folderId}`)
      throw error
    }
  }

  /**
   * Applies a patch. Moving between folders adjusts both folders' request counts in the same transaction.
   * See EMAIL_RULE (requests.schemas.ts) for how `collectEmail` and `emailRequired` constrain each other.
   */
  async update(accountId: string, requestId: string, patch: FileRequestPatch): Promise<FileRequest> {
    if (patch.collectEmail === false && patch.emailRequired === true) throw contradictoryEmail()
    const title = patch.title === undefined ? undefined : cleanTitle(patch.title)
    try {
      return await this.#db.transaction().execute(async (trx) => {
        // Writing first takes the row's lock (PostgreSQL; SQLite transactions already exclude each other),
        // so the folder and email settings read here stay current until this transaction commits: a
        // concurrent move cannot make both transactions decrement the same old folder.
        const current = await trx
          .updateTable('file_requests')
          .set({ updated_at: Date.now() })
          .where('id', '=', requestId)
          .where('account_id', '=', accountId)
          .returning(['folder_id', 'collect_email'])
          .executeTakeFirst()
        if (!current) throw requestNotFound(requestId)

        const changes: Updateable<FileRequestsTable> = {}
        if (title !== undefined) changes.title = title
        if (patch.description !== undefined) changes.description = patch.description
        if (patch.isActive !== undefined) changes.is_active = patch.isActive
        if (patch.collectEmail !== undefined) changes.collect_email = patch.collectEmail
        if (patch.emailRequired !== undefined) changes.email_required = patch.emailRequired
        if (patch.collectEmail === false) changes.email_required = false
        if (patch.emailRequired === true && !(patch.collectEmail ?? Boolean(current.collect_email))) {
          throw conflict(
            'This file request does not collect email ("collectEmail" is false), so "emailRequired" cannot be true.',
            'Send "collectEmail": true in the same body to collect and require the email.',
          )
        }
        if (patch.folderId !== undefined && patch.folderId !== current.folder_id) {
          if (patch.folderId !== null) await assertOwnedFolder(trx, accountId, patch.folderId)
          changes.folder_id = patch.folderId
          await adjustFolderCount(trx, current.folder_id, 'request_count', -1)
          await adjustFolderCount(trx, patch.folderId, 'request_count', 1)
        }
        if (Object.keys(changes).length > 0) {
          await trx.updateTable('file_requests').set(changes).where('id', '=', requestId).execute()
        }
        return this.#get(trx, accountId, requestId)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${patch.folderId}`)
      throw error
    }
  }

  /** Submissions of the account's request, newest first; each keeps its file's summary as submitted. */
  async listSubmissions(
    accountId: string,
    requestId: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<Submission>> {
    const owned = await this.#db
      .selectFrom('file_requests')
      .select('id')
      .where('id', '=', requestId)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    if (!owned) throw requestNotFound(requestId)
    const rows = await this.#submissionsPage([requestId], page.cursor, page.limit)
    return toPage(rows, page.limit, toSubmission)
  }

  /** The request behind a public link, for the public page; an unknown link is "not found". */
  async getPublic(publicId: string): Promise<PublicFileRequest> {
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
    if (!row) throw notFound('File request')
    return {
      id: row.id,
      accountId: row.account_id,
      folderId: row.folder_id,
      title: row.title,
      description: row.description,
      collectEmail: Boolean(row.collect_email),
      emailRequired: Boolean(row.email_required),
      isActive: Boolean(row.is_active),
    }
  }

  /**
   * Records a submission to the request behind `publicId`: 409 when the request is inactive, 400 when it
   * requires an email that is missing or malformed; an email it does not collect is dropped. The file's
   * summary is copied, so the submission outlives the file.
   */
  async addSubmission(input: NewSubmission): Promise<Submission> {
    const submitterName = submitted(input.submitterName, 'submitter name', SUBMISSION_LIMITS.name)
    const message = submitted(input.message, 'message', SUBMISSION_LIMITS.message)
    const email = submitted(input.submitterEmail, 'submitter email', SUBMISSION_LIMITS.email)
    return this.#db.transaction().execute(async (trx) => {
      // Counting first takes the row's lock, so the request cannot be disabled or change its email
      // settings between the checks below and the insert; a refusal rolls the count back.
      const request = await trx
        .updateTable('file_requests')
        .set((eb) => ({ submission_count: eb('submission_count', '+', 1) }))
        .where('public_id', '=', input.publicId)
        .returning(['id', 'account_id', 'is_active', 'collect_email', 'email_required'])
        .executeTakeFirst()
      if (!request) throw notFound('File request')
      if (!request.is_active) {
        throw conflict(
          'This file request is no longer accepting files.',
          'Ask the owner to reactivate the request.',
        )
      }
      const submitterEmail = request.collect_email ? email : null
      if (submitterEmail === null && request.email_required) {
        throw invalid('This file request requires the submitter email.', 'Give an email address.')
      }
      if (submitterEmail !== null && !EMAIL.test(submitterEmail)) {
        throw invalid('The submitter email is not a valid email address.')
      }
      const file = await trx
        .selectFrom('files')
        .select(['id', 'name', 'content_type', 'size'])
        .where('id', '=', input.fileId)
        .where('account_id', '=', request.account_id)
        .executeTakeFirst()
      if (!file) throw notFound(`File ${input.fileId}`)
      const now = Date.now()
      const row = {
        id: newId('sub', now),
        request_id: request.id,
        file_id: file.id,
        file_name: file.name,
        file_content_type: file.content_type,
        file_size: Number(file.size),
        submitter_name: submitterName,
        submitter_email: submitterEmail,
        message,
        created_at: now,
      }
      await trx.insertInto('submissions').values(row).execute()
      return toSubmission(row)
    })
  }
}
