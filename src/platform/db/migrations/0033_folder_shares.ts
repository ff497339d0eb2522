import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// Folder links (shares/folder-shares.*): a share link is of a file or of a folder, one each at most, so a row of
// `shares` names exactly one of `file_id` and `folder_id`. Both kinds live in one table so that a folder link
// counts its views and downloads, keeps its days, its passes and its download limit exactly as a file link does:
// the same statements, by the link's id. A folder link goes with its folder (what it counted is kept first,
// SharesRepository.keepCountsOfFolder), as a file link goes with its file.
//
// PostgreSQL alters the table in place. SQLite cannot drop a NOT NULL, so there `shares` is made again; the tables
// that point at it (the days' counts, the download passes) are made again too, since dropping the old table with
// foreign keys on would delete their rows with it: the old table is renamed first (SQLite rewrites the children's
// references to follow it), the new one filled, the children copied onto new tables that point at it, and only
// then is the old one dropped, with nothing pointing at it any more. In the migrator's transaction, as every
// migration is (db/sqlite.ts): a crash leaves the old tables whole.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await remakeShares(db, engine)
  // The account's folder links, newest first, without stepping over its file links.
  await sql`create index shares_folder_links on shares (account_id, created_at desc, id desc) where folder_id is not null`.execute(
    db,
  )
}

async function remakeShares(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine === 'postgres') {
    await sql`alter table shares alter column file_id drop not null`.execute(db)
    await sql`alter table shares add column folder_id text unique references folders (id) on delete cascade`.execute(
      db,
    )
    await sql`alter table shares add constraint shares_one_target check ((file_id is null) <> (folder_id is null))`.execute(
      db,
    )
    return
  }
  await sql`alter table shares rename to shares_before_0033`.execute(db)
  await sql`create table shares (
    id text primary key,
    account_id text not null references accounts (id) on delete cascade,
    file_id text unique references files (id) on delete cascade,
    folder_id text unique references folders (id) on delete cascade,
    public_id text not null unique,
    is_active boolean not null,
    expires_at bigint,
    view_count bigint default 0 not null,
    download_count bigint default 0 not null,
    created_at bigint not null,
    updated_at bigint not null,
    password_hash text,
    max_downloads bigint,
    constraint shares_one_target check ((file_id is null) <> (folder_id is null))
  )`.execute(db)
  const columns = sql.raw(
    'id, account_id, file_id, public_id, is_active, expires_at, view_count, download_count, created_at, updated_at, password_hash, max_downloads',
  )
  await sql`insert into shares (${columns}) select ${columns} from shares_before_0033`.execute(db)
  await sql`create table share_daily_counts_0033 (
    share_id text not null references shares (id) on delete cascade,
    day integer not null,
    views bigint default 0 not null,
    downloads bigint default 0 not null,
    account_id text not null,
    constraint share_daily_counts_pk primary key (share_id, day)
  )`.execute(db)
  await sql`insert into share_daily_counts_0033 (share_id, day, views, downloads, account_id)
    select share_id, day, views, downloads, account_id from share_daily_counts`.execute(db)
  await sql`create table download_passes_0033 (
    pass_hash text primary key,
    share_id text not null references shares (id) on delete cascade,
    bytes_left bigint not null,
    expires_at bigint not null
  )`.execute(db)
  await sql`insert into download_passes_0033 (pass_hash, share_id, bytes_left, expires_at)
    select pass_hash, share_id, bytes_left, expires_at from download_passes`.execute(db)
  // The old children point at the old table; they go first, and it after them, pointed at by nothing.
  await sql`drop table share_daily_counts`.execute(db)
  await sql`drop table download_passes`.execute(db)
  await sql`drop table shares_before_0033`.execute(db)
  await sql`alter table share_daily_counts_0033 rename to share_daily_counts`.execute(db)
  await sql`alter table download_passes_0033 rename to download_passes`.execute(db)
  await sql`create index shares_account_order on shares (account_id, created_at desc, id desc)`.execute(db)
  await sql`create index share_daily_counts_account_day on share_daily_counts (account_id, day)`.execute(db)
  await sql`create index download_passes_expires_at on download_passes (expires_at)`.execute(db)
  await sql`create index download_passes_share_id on download_passes (share_id)`.execute(db)
}
