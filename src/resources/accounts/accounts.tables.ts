// The tables of accounts, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).
import type { Generated } from 'kysely'

declare module '../../platform/db/schema.ts' {
  interface Database {
    accounts: AccountsTable
    sign_in_failures: SignInFailuresTable
    api_keys: ApiKeysTable
    sessions: SessionsTable
    setup_links: SetupLinksTable
    password_resets: PasswordResetsTable
    invitations: InvitationsTable
  }
}

export interface AccountsTable {
  id: string
  email: string
  password_hash: string | null
  created_at: number
  /** Set by an administrator: the account signs in no more and its credentials stop working. */
  disabled_at: number | null
  /** `admin` or `member` (migration 0034); the first account is an admin. */
  role: Generated<AccountRole>
  /** When it last signed in on the web (migration 0034). */
  last_sign_in_at: number | null
  /**
   * When an admin deleted it (migration 0034): it is disabled, its files go through the trash's purge, and its row
   * goes once they are gone.
   */
  deleting_at: number | null
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

/** A "Forgot your password?" link: the hash of its secret, good once until `expires_at` (migration 0024). */
export interface PasswordResetsTable {
  secret_hash: string
  account_id: string
  expires_at: number
  created_at: number
}

export type AccountRole = 'admin' | 'member'

/** A single-use link that makes an account (migration 0034): only the hash of its secret is kept. */
export interface InvitationsTable {
  id: string
  secret_hash: string
  /** The address it was emailed to; null when the admin copied the link. */
  email: string | null
  role: AccountRole
  invited_by: string | null
  created_at: number
  expires_at: number
  used_at: number | null
  used_by: string | null
}
