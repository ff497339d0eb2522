// The tables of sso, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).

declare module '../../platform/db/schema.ts' {
  interface Database {
    sso_identities: SsoIdentitiesTable
  }
}

/** An identity at a provider (issuer, subject) and the account it signs in to (migration 0036). */
export interface SsoIdentitiesTable {
  issuer: string
  subject: string
  account_id: string
  created_at: number
}
