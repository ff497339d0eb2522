// Seeds an account with many files, for the benchmarks and for anyone who wants to check their answers:
//   npm run bench:seed -- --files N --email EMAIL
// On the server's own storage (DATABASE_URL, or SQLite under DATA_DIR, read as the server reads them). The
// account is created if missing. File n (1-based) is named `report-NNNNNNN-HHHHHHHH.pdf`, N being n padded to
// 7 digits and H the hex of (n × 2654435761) mod 2^32 padded to 8, so a search has hash fragments to find; it
// is created at 2024-01-01 plus n milliseconds (newest last), lies in folder n mod 100, and every fifth file
// has a share link. A second run adds only the files still missing, so an interrupted seeding resumes.
// The files have rows but no bytes: their downloads fail, and the storage check reports every one (start the
// server with STORAGE_CHECK_INTERVAL_SECONDS=0).
//
// The rows are generated inside the database, in batches of BATCH (one statement and one transaction each):
// that is faster than COPY from a client, which would send the same rows over the socket.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import { loadConfig } from '../src/platform/config.ts'
import type { Db } from '../src/platform/db/database.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import type { Database } from '../src/platform/db/schema.ts'
import { newId } from '../src/platform/ids.ts'
import { NameIndex } from '../src/resources/files/search/name-index.repository.ts'

/** The benchmarks' own account (bench/api.ts, bench/app.ts, bench/search.ts). */
export const FILES = Number(process.env.BENCH_FILES ?? 1_000_000)
export const ACCOUNT_ID = 'acc_bench'
const ACCOUNT_EMAIL = 'bench@example.com'
export const FOLDERS = 100
export const BENCH_DIR = path.resolve('.bench')
const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const PG_DATABASE = 'coffer_bench'
const BATCH = 250_000
/**
 * Chunks of the name index (1,024 files) written in one transaction: the server writes one, or a few at start.
 * More write each gram's rows once for several, but hold every gram's files in memory (262,144 files here).
 */
const SEED_CHUNKS_AT_ONCE = 256
const BASE_TIME = Date.UTC(2024, 0, 1)

/** The seeded file n's id and folder's id, from the account's: readable, and distinct between accounts. */
export const fileIdOf = (accountId: string, n: number) =>
  `fil_${accountId.slice(4)}_${String(n).padStart(10, '0')}`
export const folderIdOf = (accountId: string, f: number) =>
  `fld_${accountId.slice(4)}_${String(f).padStart(3, '0')}`
/** The seeded file n's name, as the statements below make it. */
export const fileNameOf = (n: number) =>
  `report-${String(n).padStart(7, '0')}-${hashOf(n).toString(16).padStart(8, '0')}.pdf`

/** (n × 2654435761) mod 2^32, exactly: from n = 3,393,264 on, the product is past a double's 2^53. */
const hashOf = (n: number) => Number((BigInt(n) * 2654435761n) % 2n ** 32n)

/** When the seeded file n was made. */
export const createdAtOf = (n: number) => BASE_TIME + n

/** (n × 2654435761) mod 2^32 in SQL, n being a 64-bit integer expression (not a real: see `hashOf`). */
const HASH = (n: string) => `((${n} * 2654435761) % 4294967296)`

export interface SeedReport {
  accountId: string
  /** Files added by this run (0 when all were there). */
  added: number
  seconds: number
}

/**
 * Gives the account of `email` (made, with `accountId` or a new id, if missing) the seeded files 1..`files`,
 * adding those missing.
 */
export async function seedAccount(
  db: Db,
  options: { email: string; files: number; accountId?: string; progress?: (line: string) => void },
): Promise<SeedReport> {
  const k = db.kysely as Kysely<Database>
  const started = performance.now()
  const existing = await k
    .selectFrom('accounts')
    .select('id')
    .where('email', '=', options.email)
    .executeTakeFirst()
  const accountId = existing?.id ?? options.accountId ?? newId('acc')
  if (!existing) {
    await k
      .insertInto('accounts')
      .values({ id: accountId, email: options.email, password_hash: null, created_at: BASE_TIME })
      .execute()
  }
  const tag = accountId.slice(4)
  for (let f = 0; f < FOLDERS; f++) {
    await k
      .insertInto('folders')
      .values({
        id: folderIdOf(accountId, f),
        account_id: accountId,
        name: `Folder ${f}`,
        name_key: `folder ${f}`,
        created_at: BASE_TIME + f,
      })
      .onConflict((oc) => oc.doNothing())
      .execute()
  }
  // Batches commit in order, so the highest id seeded says where an interrupted run stopped.
  const last = await k
    .selectFrom('files')
    .select((eb) => eb.fn.max('id').as('id'))
    .where('id', '>', `fil_${tag}_`)
    .where('id', '<', `fil_${tag}_~`)
    .executeTakeFirst()
  const have = last?.id ? Number(last.id.slice(-10)) : 0
  for (let from = have + 1; from <= options.files; from += BATCH) {
    const to = Math.min(from + BATCH - 1, options.files)
    await insertBatch(db, accountId, tag, from, to)
    options.progress?.(
      `  ${to.toLocaleString('en')} of ${options.files.toLocaleString('en')} files, ${((performance.now() - started) / 1000).toFixed(0)} s`,
    )
  }
  if (have < options.files) {
    await sql`update folders set file_count = (select count(*) from files where files.folder_id = folders.id)
              where account_id = ${accountId}`.execute(k)
    // File n is number n - 1 of the account, unless it had files of its own: then all are numbered again.
    const numbered = await sql<{ files: number; next: number | null }>`
      select count(*) as files, max(seq) + 1 as next from files where account_id = ${accountId}`.execute(k)
    const names = new NameIndex(db)
    const counted = numbered.rows[0]
    if (Number(counted?.files) !== Number(counted?.next)) await names.rebuild(accountId)
    else {
      await sql`update accounts set file_seq = ${Number(counted?.files)},
        last_file_at = (select max(created_at) from files where account_id = ${accountId})
        where id = ${accountId}`.execute(k)
    }
    // PostgreSQL: vacuumed too, as autovacuum leaves a table some time after its writes, so that pages of ids
    // are read from the order indexes alone and planned as they would be then.
    await (db.engine === 'postgres' ? sql`vacuum analyze` : sql`analyze`).execute(k)
    const indexing = performance.now()
    const chunks = await names.foldFull(accountId, SEED_CHUNKS_AT_ONCE)
    options.progress?.(
      `  name index: ${chunks.toLocaleString('en')} chunks in ${((performance.now() - indexing) / 1000).toFixed(0)} s`,
    )
  }
  return {
    accountId,
    added: Math.max(0, options.files - have),
    seconds: (performance.now() - started) / 1000,
  }
}

/** Files from..to (inclusive) of the account, and the shares of every fifth, in one transaction. */
async function insertBatch(db: Db, accountId: string, tag: string, from: number, to: number): Promise<void> {
  await db.kysely.transaction().execute(async (trx) => {
    if (db.engine === 'postgres') {
      await sql`
        insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at, seq)
        select 'fil_' || ${tag} || '_' || lpad(n::text, 10, '0'), ${accountId},
               'fld_' || ${tag} || '_' || lpad((n % ${FOLDERS})::text, 3, '0'),
               'report-' || lpad(n::text, greatest(7, length(n::text)), '0') || '-' || lpad(to_hex(${sql.raw(HASH('n::bigint'))}), 8, '0') || '.pdf',
               'application/pdf', 1000 + n, 'files/' || ${accountId} || '/' || n, null,
               ${BASE_TIME}::bigint + n, ${BASE_TIME}::bigint + n, n - 1
        from generate_series(${from}::bigint, ${to}::bigint) as n`.execute(trx)
      await sql`
        insert into shares (id, account_id, file_id, public_id, is_active, expires_at, view_count, download_count, created_at, updated_at)
        select 'shr_' || ${tag} || '_' || lpad(n::text, 10, '0'), ${accountId},
               'fil_' || ${tag} || '_' || lpad(n::text, 10, '0'),
               'pub_' || ${tag} || '_' || lpad(n::text, 10, '0'), true, null, n % 50, n % 7,
               ${BASE_TIME}::bigint + n, ${BASE_TIME}::bigint + n
        from generate_series(${from}::bigint, ${to}::bigint) as n where n % 5 = 0`.execute(trx)
      return
    }
    await sql`
      with recursive seq(n) as (select cast(${from} as integer) union all select n + 1 from seq where n < ${to})
      insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at, seq)
      select printf('fil_%s_%010d', ${tag}, n), ${accountId}, printf('fld_%s_%03d', ${tag}, n % ${FOLDERS}),
             printf('report-%07d-%08x.pdf', n, ${sql.raw(HASH('n'))}),
             'application/pdf', 1000 + n, printf('files/%s/%d', ${accountId}, n), null,
             ${BASE_TIME} + n, ${BASE_TIME} + n, n - 1
      from seq`.execute(trx)
    const firstShared = Math.ceil(from / 5) * 5
    if (firstShared > to) return
    await sql`
      with recursive seq(n) as (select cast(${firstShared} as integer) union all select n + 5 from seq where n + 5 <= ${to})
      insert into shares (id, account_id, file_id, public_id, is_active, expires_at, view_count, download_count, created_at, updated_at)
      select printf('shr_%s_%010d', ${tag}, n), ${accountId}, printf('fil_%s_%010d', ${tag}, n),
             printf('pub_%s_%010d', ${tag}, n), 1, null, n % 50, n % 7, ${BASE_TIME} + n, ${BASE_TIME} + n
      from seq`.execute(trx)
  })
}

/** Table and index sizes, largest first, in bytes: what the seeded rows cost on disk. */
export async function storageSizes(db: Db): Promise<{ name: string; bytes: number }[]> {
  if (db.engine === 'postgres') {
    const { rows } = await sql<{ name: string; bytes: string }>`
      select name, bytes from (
        -- A table with its TOAST table (where values over about 2 KB go, such as the name index's bitmaps).
        select c.relname as name, case c.relkind when 'r' then pg_table_size(c.oid) else pg_relation_size(c.oid) end as bytes
        from pg_class c join pg_namespace ns on ns.oid = c.relnamespace
        where ns.nspname = current_schema() and c.relkind in ('r', 'i')) as sizes
      where bytes > 1048576 order by 2 desc`.execute(db.kysely)
    return rows.map((row) => ({ name: row.name, bytes: Number(row.bytes) }))
  }
  const { rows } = await sql<{ name: string; bytes: number }>`
    select name, sum(pgsize) as bytes from dbstat group by name having sum(pgsize) > 1048576
    order by 2 desc`.execute(db.kysely)
  return rows.map((row) => ({ name: row.name, bytes: Number(row.bytes) }))
}

async function ensurePgDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  const exists = await admin.query('select 1 from pg_database where datname = $1', [name])
  if (exists.rowCount === 0) await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(PG_ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}

export interface Seeded {
  db: Db
  /** The server's DATA_DIR (SQLite's file, and blobs). */
  dataDir: string
  /** PostgreSQL's database, undefined on SQLite. */
  databaseUrl: string | undefined
}

/**
 * A benchmark's database for the engine, migrated, with the benchmarks' account (ACCOUNT_ID) holding `files`
 * seeded files; open. The data set `set` has its own: SQLite under .bench/<engine> (.bench/<set>/<engine>),
 * PostgreSQL in the database coffer_bench (coffer_<set>, with _ for -).
 */
export async function openSeeded(
  engine: Engine,
  { files = FILES, set = 'bench' }: { files?: number; set?: string } = {},
): Promise<Seeded> {
  const dataDir = set === 'bench' ? path.join(BENCH_DIR, engine) : path.join(BENCH_DIR, set, engine)
  mkdirSync(dataDir, { recursive: true })
  const databaseUrl =
    engine === 'postgres'
      ? await ensurePgDatabase(set === 'bench' ? PG_DATABASE : `coffer_${set.replaceAll('-', '_')}`)
      : undefined
  const db = openDatabase({ databaseUrl, dataDir })
  await migrate(db)
  const report = await seedAccount(db, {
    email: ACCOUNT_EMAIL,
    accountId: ACCOUNT_ID,
    files,
    progress: (line) => console.log(`  [${engine}]${line}`),
  })
  if (report.added > 0) {
    console.log(
      `  [${engine}] seeded ${report.added.toLocaleString('en')} files in ${report.seconds.toFixed(1)} s`,
    )
  }
  // Files seeded before the name index (numbered by migration 0019, or emptied by 0021) get their chunks now,
  // not from the server while it is measured.
  await new NameIndex(db).foldAll(SEED_CHUNKS_AT_ONCE)
  return { db, dataDir, databaseUrl }
}

/**
 * The environment of a Coffer server on a seeded data set, answering as `publicUrl` on `port`. The storage
 * check at start is off: the seeded files have no bytes, so it would find every one missing, comparing millions
 * of rows in the server's process while a benchmark runs (it held lists to a fifth).
 */
export function seededServerEnv(
  { dataDir, databaseUrl }: Pick<Seeded, 'dataDir' | 'databaseUrl'>,
  publicUrl: string,
  port: number,
): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: publicUrl,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '100000000',
    STORAGE_CHECK_INTERVAL_SECONDS: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  }
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`

// npm run bench:seed -- --files N --email EMAIL
if (import.meta.main) {
  const { values } = parseArgs({
    options: { files: { type: 'string' }, email: { type: 'string' } },
  })
  const files = Number(values.files)
  if (!Number.isInteger(files) || files < 1 || files > 99_999_999 || !values.email?.includes('@')) {
    console.error('usage: npm run bench:seed -- --files N --email EMAIL   (1 ≤ N ≤ 99,999,999)')
    process.exit(2)
  }
  const config = loadConfig()
  if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true })
  const db = openDatabase(config)
  try {
    await migrate(db)
    const report = await seedAccount(db, { email: values.email, files, progress: console.log })
    console.log(
      `${values.email} (${report.accountId}) holds files 1 to ${files.toLocaleString('en')}: ` +
        `${report.added.toLocaleString('en')} added in ${report.seconds.toFixed(1)} s (${db.engine})`,
    )
    for (const { name, bytes } of await storageSizes(db))
      console.log(`  ${name.padEnd(40)} ${mib(bytes).padStart(10)}`)
  } finally {
    await db.close()
  }
}
