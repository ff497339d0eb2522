import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// PostgreSQL tells every process when API keys change, so each can cache credentials and still refuse a
// revoked key at once (see db/read-path/cached-lookup.ts). A key's use (last_used_at) is not a change worth
// telling.
// SQLite needs nothing: its processes share one file, and a changed file is visible to every reader.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine !== 'postgres') return
  await sql`
    create function coffer_notify_credentials() returns trigger language plpgsql as $$
    begin
      perform pg_notify('coffer_credentials', '');
      return null;
    end $$`.execute(db)
  await sql`
    create trigger api_keys_changed
    after update of account_id, secret_hash, scopes, revoked_at or delete or truncate on api_keys
    for each statement execute function coffer_notify_credentials()`.execute(db)
}
