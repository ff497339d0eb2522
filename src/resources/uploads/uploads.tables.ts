// The tables of uploads, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).

declare module '../../platform/db/schema.ts' {
  interface Database {
    upload_intents: UploadIntentsTable
    upload_blobs: UploadBlobsTable
  }
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
