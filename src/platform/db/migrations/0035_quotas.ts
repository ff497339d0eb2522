import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// Quotas (issue 45, 2; resources/quotas/). What an account stores is kept in `account_usage`, one row per account
// that ever held a file: its files and bytes, the trash included, and the part of them in the trash. Triggers on
// `files` keep it exact in the transaction of every change (a file made, deleted, trashed or restored, its size
// set), so reading it is one row whatever the number of files; a row is made by the first file and goes with its
// account. What an admin set for an account is in `account_quotas`: its quota in bytes, or unlimited (`unlimited`),
// or neither (no row, or both unset: DEFAULT_QUOTA_BYTES applies), and its largest file (null: none). Uploads
// prepared and not finished reserve their declared bytes: a partial index finds an account's.
// The triggers are created before the backfill, in the migration's transaction, so that no file escapes both.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await db.schema
    .createTable('account_usage')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('files', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('trash_files', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('trash_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .createTable('account_quotas')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
    .addColumn('quota_bytes', 'bigint')
    .addColumn('unlimited', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('max_file_bytes', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await sql`create index upload_intents_reserving on upload_intents (account_id) where state in ('uploading', 'processing')`.execute(
    db,
  )

  if (engine === 'postgres') await postgresUsageTriggers(db)
  else await sqliteUsageTriggers(db)

  await sql`insert into account_usage (account_id, files, bytes, trash_files, trash_bytes)
    select account_id, count(*), sum(size),
      sum(case when trashed_at is null then 0 else 1 end),
      sum(case when trashed_at is null then 0 else size end)
    from files group by account_id`.execute(db)
}

// A file's part of its account's usage, for `row` (new or old).
const trashed = (row: string) => sql.raw(`case when ${row}.trashed_at is null then 0 else 1 end`)
const trashedBytes = (row: string) =>
  sql.raw(`case when ${row}.trashed_at is null then 0 else ${row}.size end`)
const add = sql`insert into account_usage (account_id, files, bytes, trash_files, trash_bytes)
    values (new.account_id, 1, new.size, ${trashed('new')}, ${trashedBytes('new')})
    on conflict (account_id) do update set files = account_usage.files + 1,
      bytes = account_usage.bytes + excluded.bytes,
      trash_files = account_usage.trash_files + excluded.trash_files,
      trash_bytes = account_usage.trash_bytes + excluded.trash_bytes`
// Only an update: a file deleted with its account finds the row gone (or about to go) with it.
const remove = sql`update account_usage set files = files - 1, bytes = bytes - old.size,
      trash_files = trash_files - ${trashed('old')}, trash_bytes = trash_bytes - ${trashedBytes('old')}
    where account_id = old.account_id`
const change = sql`update account_usage set bytes = bytes - old.size + new.size,
      trash_files = trash_files - ${trashed('old')} + ${trashed('new')},
      trash_bytes = trash_bytes - ${trashedBytes('old')} + ${trashedBytes('new')}
    where account_id = new.account_id`
const changed = sql`old.size <> new.size or (old.trashed_at is null) <> (new.trashed_at is null)`

/** Statement triggers over transition tables (PostgreSQL). */
async function postgresUsageTriggers(db: Kysely<unknown>): Promise<void> {
  // (In PL/pgSQL, `new` and `old` name the trigger's records: the transition tables' rows are `n` and `o`.)
  // Statement triggers with transition tables: one change per account a statement touched, whatever the number
  // of its rows. Row triggers would update the same row once per file, and PostgreSQL keeps every version of a
  // row updated within one transaction, each update walking them: a purge of many files in one statement would
  // take time quadratic in their number.
  const sums = (rows: string) =>
    sql.raw(`select account_id, count(*) as files, sum(size) as bytes,
        sum(case when trashed_at is null then 0 else 1 end) as trash_files,
        sum(case when trashed_at is null then 0 else size end) as trash_bytes
      from ${rows} group by account_id`)
  const statements = {
    coffer_usage_add: sql`insert into account_usage (account_id, files, bytes, trash_files, trash_bytes)
        ${sums('new_rows')}
      on conflict (account_id) do update set files = account_usage.files + excluded.files,
        bytes = account_usage.bytes + excluded.bytes,
        trash_files = account_usage.trash_files + excluded.trash_files,
        trash_bytes = account_usage.trash_bytes + excluded.trash_bytes`,
    coffer_usage_remove: sql`update account_usage set files = account_usage.files - gone.files,
        bytes = account_usage.bytes - gone.bytes, trash_files = account_usage.trash_files - gone.trash_files,
        trash_bytes = account_usage.trash_bytes - gone.trash_bytes
      from (${sums('old_rows')}) gone where account_usage.account_id = gone.account_id`,
    // Only the rows whose size or place (in use, in the trash) changed: a rename or a move changes nothing.
    coffer_usage_change: sql`update account_usage set bytes = account_usage.bytes + delta.bytes,
        trash_files = account_usage.trash_files + delta.trash_files,
        trash_bytes = account_usage.trash_bytes + delta.trash_bytes
      from (select n.account_id, sum(n.size - o.size) as bytes,
          sum(${trashed('n')} - ${trashed('o')}) as trash_files,
          sum(${trashedBytes('n')} - ${trashedBytes('o')}) as trash_bytes
        from new_rows n join old_rows o on o.id = n.id
        where o.size <> n.size or (o.trashed_at is null) <> (n.trashed_at is null)
        group by n.account_id) delta
      where account_usage.account_id = delta.account_id`,
  }
  for (const [name, body] of Object.entries(statements)) {
    await sql`create function ${sql.raw(name)}() returns trigger language plpgsql as $$
      begin
        ${body};
        return null;
      end $$`.execute(db)
  }
  await sql`create trigger files_usage_insert after insert on files referencing new table as new_rows
            for each statement execute function coffer_usage_add()`.execute(db)
  await sql`create trigger files_usage_delete after delete on files referencing old table as old_rows
            for each statement execute function coffer_usage_remove()`.execute(db)
  await sql`create trigger files_usage_update after update on files referencing old table as old_rows
            new table as new_rows for each statement execute function coffer_usage_change()`.execute(db)
}

/** Row triggers (SQLite, which has no transition tables). */
async function sqliteUsageTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create trigger files_usage_insert after insert on files begin ${add}; end`.execute(db)
  await sql`create trigger files_usage_delete after delete on files begin ${remove}; end`.execute(db)
  await sql`create trigger files_usage_update after update of size, trashed_at on files
            when ${changed} begin ${change}; end`.execute(db)
}
