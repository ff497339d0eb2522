// Row types of every table, as Kysely sees them. Timestamps are epoch milliseconds on both engines, so
// ordering, keyset cursors and comparisons are plain integer arithmetic everywhere.
import type { Generated } from 'kysely'

export interface AccountsTable {
  id: string
  email: string
  password_hash: string | null
  created_at: number
  /** Set by an administrator: the account signs in no more and its credentials stop working. */
  disabled_at: number | null
  /** The number the account's next file gets (`FilesTable.seq`); see migration 0019. */
  file_seq: Generated<number>
  /** When its newest file was made: the next one is made later, even by a clock behind this one. */
  last_file_at: Generated<number>
  /**
   * How many of its files, the first by number, the name index holds (files/search/name-index.repository.ts;
   * migration 0021).
   */
  name_indexed: Generated<number>
}

/** A failed sign-in of an existing account (migration 0016). */
export interface SignInFailuresTable {
  account_id: string
  at: number
  /** The client address as the rate limits name it. */
  client: string
}

export interface ApiKeysTable {
  id: string
  account_id: string
  name: string
  /** SHA-256 (hex) of the whole secret; the secret itself is never stored. */
  secret_hash: string
  /** The first characters of the secret, so a user can tell keys apart. */
  prefix: string
  /** Space-separated scope names. */
  scopes: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
  /** The key stops working after this time; null for never. */
  expires_at: number | null
}

export interface FoldersTable {
  id: string
  account_id: string
  name: string
  /** Lower-cased name: folder names are unique per account regardless of case. */
  name_key: string
  file_count: Generated<number>
  request_count: Generated<number>
  created_at: number
}

export interface FilesTable {
  id: string
  account_id: string
  folder_id: string | null
  name: string
  content_type: string
  size: number
  blob_key: string
  sha256: string | null
  /** CRC-32 of the bytes (unsigned), stored by upload processing for zips; null for files made before it. */
  crc32: number | null
  created_at: number
  updated_at: number
  /**
   * The file's number in its account, in the order the account's files were made (migration 0019); set by
   * `FilesRepository.insert`. Null only for a row written another way, until `NameIndex.rebuild`.
   */
  seq: number | null
  /** When the file was deleted into the trash (migration 0032); null for a file in use. */
  trashed_at: number | null
  /** When the trash purge removes it for good; null for a file in use. */
  purge_at: number | null
}

/**
 * The name index (migration 0019, files/search/name-index.repository.ts): per account and block of its files, the slots of the
 * files whose names hold `gram` (or that lie in a folder, for a folder's gram); block -1 holds a gram's count
 * over all blocks, with no slots.
 */
export interface NameGramsTable {
  account_id: string
  gram: string
  block: number
  /** How many slots `slots` holds. */
  files: number
  slots: Uint8Array
}

/**
 * Per account and block of the name index, how many of its slots were left behind by files deleted, renamed
 * or moved since it was written (migration 0021): the job writes a block again once they are many.
 */
export interface NameStaleTable {
  account_id: string
  block: number
  slots: number
}

/** A share link, of a file or of a folder (migration 0033): exactly one of `file_id` and `folder_id` is set. */
export interface SharesTable {
  id: string
  account_id: string
  file_id: string | null
  folder_id: string | null
  public_id: string
  is_active: boolean
  expires_at: number | null
  view_count: Generated<number>
  download_count: Generated<number>
  /** scrypt hash of the link's password (auth/secrets.ts); null for a link without one. */
  password_hash: string | null
  /** Downloads allowed in all; null for no limit. */
  max_downloads: number | null
  created_at: number
  updated_at: number
}

/** A share's views and downloads on one UTC day. */
export interface ShareDailyCountsTable {
  share_id: string
  /** The share's account, copied when the day's row is made: the account's days are read by it. */
  account_id: string
  /** Days since 1970-01-01 (UTC). */
  day: number
  views: Generated<number>
  downloads: Generated<number>
}

/** What the links of deleted files counted, per account and day (migration 0029). */
export interface PastShareCountsTable {
  account_id: string
  /** Days since 1970-01-01 (UTC). */
  day: number
  views: Generated<number>
  downloads: Generated<number>
}

/** The bytes a download pass of a limited share link may still fetch (migration 0015). */
export interface DownloadPassesTable {
  /** SHA-256 (hex) of the pass, which the browser holds in a cookie. */
  pass_hash: string
  share_id: string
  bytes_left: number
  expires_at: number
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

export type UploadState = 'uploading' | 'processing' | 'complete' | 'error'

export interface UploadIntentsTable {
  id: string
  account_id: string
  folder_id: string | null
  name: string
  content_type: string
  size: number
  /** The blob pathname the grant allows, chosen by the server. */
  pathname: string
  /** SHA-256 (hex) of the grant; the grant itself is never stored. */
  grant_hash: string
  expires_at: number
  state: UploadState
  error: string | null
  /** The stored blob's file id once the blob endpoint reports it (`blobKeyOf(account_id, file_id)`). */
  file_id: string | null
  stored_size: number | null
  sha256: string | null
  /** CRC-32 of the stored bytes (migration 0028), computed with the SHA-256; null when that is null. */
  crc32: number | null
  stored_at: number | null
  /** Processing is held by one process until then. */
  lease_until: number | null
  /** The file request the upload was prepared for on its public page; null for an upload through the API. */
  request_id: string | null
  /** What the submitter typed on the request's page, recorded in the Submission. */
  submitter_name: string | null
  submitter_email: string | null
  submitter_message: string | null
  /** The sending of a request's page the intent belongs to (migration 0030); null for an owner's upload. */
  sending_id: string | null
  /**
   * The address a public page's upload was prepared from, as the rate limits name it, while the upload may
   * still take bytes (migration 0017); null otherwise, and for uploads through the API.
   */
  client: string | null
  /** The client's id of the multipart upload whose blob the intent adopted (migration 0027); null otherwise. */
  adopted_upload_id: string | null
  created_at: number
  updated_at: number
}

export interface UploadBlobsTable {
  key: string
  intent_id: string
  /** The blob of a multipart upload: the upload's id as the client knows it, and as the BlobStore does. */
  upload_id: string | null
  store_upload_id: string | null
  /** Null while the blob is being written. */
  size: number | null
  sha256: string | null
  /** CRC-32 of the bytes (migration 0028), with the SHA-256. */
  crc32: number | null
  /** When a completion began asking the store to join the parts (migration 0027); null before. */
  completing_at: number | null
  created_at: number
}

export interface FilePreviewsTable {
  file_id: string
  blob_key: string
  content_type: string
  width: number
  height: number
  size: number
  created_at: number
}

export interface ServerSecretsTable {
  name: string
  value: string
  created_at: number
}

/** A blob whose row is gone, to be removed from the BlobStore (storage/blob-deletions.job.ts). */
export interface BlobDeletionsTable {
  key: string
  recorded_at: number
}

/** A file whose SHA-256 and CRC-32 are still to be computed (files/file-digests.job.ts). */
export interface FileDigestsPendingTable {
  file_id: string
  recorded_at: number
}

/** A backup in progress, which holds back blob removals until `until` (storage/backups.ts). */
export interface BackupHoldsTable {
  id: string
  until: number
}

/** A signed-in browser (accounts/sessions.service.ts). */
export interface SessionsTable {
  id: string
  /** SHA-256 (hex) of the cookie's secret; the secret itself is never stored. */
  secret_hash: string
  account_id: string
  created_at: number
  /** Updated at most once a minute: the idle expiry counts from it. */
  last_seen_at: number
  expires_at: number
}

/** The one-time link that creates the first account (accounts/setup.service.ts). */
export interface SetupLinksTable {
  secret_hash: string
  created_at: number
  expires_at: number
}

/** One of oidc-provider's records (oauth/oauth-records.repository.ts). */
export interface OauthRecordsTable {
  model: string
  /** SHA-256 (hex) of the record's id, which for most models is a bearer secret. */
  id_hash: string
  /** The record as JSON, without its id (`jti`) or user code. */
  payload: string
  grant_id: string | null
  uid_hash: string | null
  user_code_hash: string | null
  account_id: string | null
  expires_at: number | null
  consumed_at: number | null
  last_used_at: number | null
}

/** An account's webhook endpoint (migration 0022, webhooks/webhooks.repository.ts). */
export interface WebhookEndpointsTable {
  id: string
  account_id: string
  url: string
  /** The event types it receives, each between spaces: " file.created share.created ". */
  event_types: string
  description: string | null
  is_active: boolean
  /** Which of the endpoint's secrets signs now (webhooks/webhook-secrets.ts); none is stored. */
  secret_generation: number
  /** Until when the secret of the previous generation signs too, after a rotation. */
  previous_secret_until: number | null
  /** Since when every delivery to it has failed; null while it answers. */
  failing_since: number | null
  /** Why Coffer disabled it (three days of failures); null when the owner did, or it is active. */
  disabled_reason: string | null
  created_at: number
  updated_at: number
}

/** An email to send, written in the transaction of the change that caused it (migration 0024). */
export interface MailOutboxTable {
  id: string
  to_address: string
  subject: string
  text_body: string
  state: 'pending' | 'sent' | 'failed'
  attempts: number
  next_attempt_at: number
  last_error: string | null
  created_at: number
  updated_at: number
}

/** A submission its request's owner is still to be told of by email (migration 0024). */
export interface SubmissionNoticesTable {
  submission_id: string
  request_id: string
  created_at: number
}

/** A "Forgot your password?" link: the hash of its secret, good once until `expires_at` (migration 0024). */
export interface PasswordResetsTable {
  secret_hash: string
  account_id: string
  expires_at: number
  created_at: number
}

/** The outbox: an event, written in the transaction of the change that caused it (migration 0022). */
export interface EventsTable {
  id: string
  account_id: string
  type: string
  /** The JSON body every endpoint receives. */
  payload: string
  created_at: number
}

/** An event to send to an endpoint, until it succeeds or runs out of attempts (migration 0022). */
export interface WebhookDeliveriesTable {
  id: string
  endpoint_id: string
  event_id: string
  state: 'pending' | 'succeeded' | 'failed'
  attempts: number
  /** When the next attempt is due; null once the delivery has ended. */
  next_attempt_at: number | null
  /** Until when the process sending it holds it. */
  lease_until: number | null
  /** A retry asked for while an attempt was under way, made once it ends. */
  retry_requested: Generated<boolean>
  created_at: number
  updated_at: number
}

/** One attempt of a delivery, as the endpoint answered it (migration 0022). */
export interface WebhookAttemptsTable {
  delivery_id: string
  attempt: number
  at: number
  status: number | null
  latency_ms: number
  error: string | null
  response: string | null
}

export interface Database {
  accounts: AccountsTable
  sign_in_failures: SignInFailuresTable
  api_keys: ApiKeysTable
  folders: FoldersTable
  files: FilesTable
  name_grams: NameGramsTable
  name_stale: NameStaleTable
  shares: SharesTable
  share_daily_counts: ShareDailyCountsTable
  past_share_counts: PastShareCountsTable
  download_passes: DownloadPassesTable
  file_requests: FileRequestsTable
  submissions: SubmissionsTable
  upload_intents: UploadIntentsTable
  upload_blobs: UploadBlobsTable
  file_previews: FilePreviewsTable
  server_secrets: ServerSecretsTable
  blob_deletions: BlobDeletionsTable
  file_digests_pending: FileDigestsPendingTable
  backup_holds: BackupHoldsTable
  sessions: SessionsTable
  setup_links: SetupLinksTable
  oauth_records: OauthRecordsTable
  webhook_endpoints: WebhookEndpointsTable
  events: EventsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  mail_outbox: MailOutboxTable
  password_resets: PasswordResetsTable
  submission_notices: SubmissionNoticesTable
}
