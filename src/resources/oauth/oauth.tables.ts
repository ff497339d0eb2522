// The tables of oauth, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).

declare module '../../platform/db/schema.ts' {
  interface Database {
    oauth_records: OauthRecordsTable
  }
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
