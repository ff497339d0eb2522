// The tables of requests, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).
import type { Generated } from 'kysely'

declare module '../../platform/db/schema.ts' {
  interface Database {
    file_requests: FileRequestsTable
    submissions: SubmissionsTable
    submission_notices: SubmissionNoticesTable
  }
}

export interface FileRequestsTable {
  id: string
  account_id: string
  folder_id: string | null
  public_id: string
  title: string
  description: string | null
  collect_email: boolean
  email_required: boolean
  is_active: boolean
  submission_count: Generated<number>
  /** After this time the public page accepts no more files; null for no deadline. */
  deadline_at: number | null
  /** Whether the deadline's passing was handled (request.closed recorded); false again when it changes. */
  deadline_handled: Generated<boolean>
  /** Whether its owner is told of submissions by email (when the server sends email). */
  email_owner: Generated<boolean>
  /** When its owner was last told of submissions by email; null before the first. */
  noticed_at: number | null
  /** Files accepted in all, submissions and uploads under way together; null for no limit. */
  max_files: number | null
  /** The largest file accepted, in bytes; null for the server's MAX_FILE_SIZE. */
  max_file_size: number | null
  /** JSON array of extensions (".pdf") and MIME types ("image/*"); null for any file. */
  allowed_types: string | null
  created_at: number
  updated_at: number
}

export interface SubmissionsTable {
  id: string
  request_id: string
  /** Snapshot of the submitted file: it outlives the file itself. */
  file_id: string
  file_name: string
  file_content_type: string
  file_size: number
  submitter_name: string | null
  submitter_email: string | null
  message: string | null
  /** The sending it came in (migration 0030): the files sent at once share it; null before. */
  sending_id: string | null
  created_at: number
}

/** A submission its request's owner is still to be told of by email (migration 0024). */
export interface SubmissionNoticesTable {
  submission_id: string
  request_id: string
  created_at: number
}
