import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// Access tokens are kept in memory per process, as API keys are (migration 0004), so PostgreSQL tells every
// process when one may have ended before its expiry: a token or its grant deleted (revocation, a replayed code
// or refresh token, an application disconnected, an account disabled), or a token rewritten. Row triggers, for
// those two models alone: the authorization server writes its other records (sessions, interactions, codes)
// far more often, and a grant's use (last_used_at) is not a change. Notifications of one transaction on one
// channel with one payload are delivered once, so deleting many rows costs one.
// SQLite needs nothing: its processes share one file, and a changed file is visible to every reader.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine !== 'postgres') return
  await sql`
    create trigger oauth_tokens_deleted
    after delete on oauth_records
    for each row when (old.model in ('AccessToken', 'Grant'))
    execute function coffer_notify_credentials()`.execute(db)
  await sql`
    create trigger oauth_tokens_changed
    after update of payload, grant_id, expires_at on oauth_records
    for each row when (new.model in ('AccessToken', 'Grant'))
    execute function coffer_notify_credentials()`.execute(db)
  await sql`
    create trigger oauth_records_truncated
    after truncate on oauth_records
    for each statement execute function coffer_notify_credentials()`.execute(db)
}
