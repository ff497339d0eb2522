import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// PostgreSQL tells every process which accounts' files, folders or shares changed, so each can cache file
// rows (a file is read joined with its folder and share) and still serve every change from the next request
// on (see files/files.repository.ts). The payload is the account id: a change to one account leaves the
// others' entries in use. Statement triggers with transition tables send one notification per account a
// statement touched, and PostgreSQL folds repeats within a transaction into one, so a bulk change costs one
// per account, not one per row. An account's id never changes, so the new rows of an update name the same
// accounts as the old.
// SQLite needs nothing: its readers see that the file changed (see Db.changeEpoch).
const TABLES = ['files', 'folders', 'shares'] as const

export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine !== 'postgres') return
  for (const rows of ['new_rows', 'old_rows']) {
    await sql`
      create function ${sql.raw(`coffer_notify_accounts_of_${rows}`)}() returns trigger language plpgsql as $$
      begin
        perform pg_notify('coffer_metadata', account_id) from (select distinct account_id from ${sql.raw(rows)}) changed;
        return null;
      end $$`.execute(db)
  }
  await sql`
    create function coffer_notify_all_accounts() returns trigger language plpgsql as $$
    begin
      perform pg_notify('coffer_metadata', '');
      return null;
    end $$`.execute(db)
  for (const table of TABLES) {
    const on = sql.raw(table)
    const name = (event: string) => sql.raw(`${table}_${event}_notify`)
    await sql`create trigger ${name('insert')} after insert on ${on} referencing new table as new_rows
              for each statement execute function coffer_notify_accounts_of_new_rows()`.execute(db)
    await sql`create trigger ${name('update')} after update on ${on} referencing new table as new_rows
              for each statement execute function coffer_notify_accounts_of_new_rows()`.execute(db)
    await sql`create trigger ${name('delete')} after delete on ${on} referencing old table as old_rows
              for each statement execute function coffer_notify_accounts_of_old_rows()`.execute(db)
    await sql`create trigger ${name('truncate')} after truncate on ${on}
              for each statement execute function coffer_notify_all_accounts()`.execute(db)
  }
}
