// The benchmarks' large account: 1,000,000 files (BENCH_FILES) in 100 folders, a fifth of them shared, seeded
// once per engine and kept for later runs (SQLite under .bench/<engine>, PostgreSQL in the database
// coffer_bench). The rows are generated inside the database, the same on both engines, so that a run on either
// reads the same names: "report-000123-9e3779b1.pdf" gives searches something to find.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import type { Db } from '../src/db/database.ts'
import type { Engine } from '../src/db/engine.ts'
import { migrate } from '../src/db/migrate.ts'
import { openDatabase } from '../src/db/open.ts'
import type { Database } from '../src/db/schema.ts'

export const FILES = Number(process.env.BENCH_FILES ?? 1_000_000)
export const FOLDERS = 100
export const ACCOUNT_ID = 'acc_bench'
export const BENCH_DIR = path.resolve('.bench')
const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const PG_DATABASE = 'coffer_bench'

async function ensurePgDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  const exists = await admin.query('select 1 from pg_database where datname = $1', [PG_DATABASE])
  if (exists.rowCount === 0) await admin.query(`create database ${PG_DATABASE}`)
  await admin.end()
  const url = new URL(PG_ADMIN_URL)
  url.pathname = `/${PG_DATABASE}`
  return url.toString()
}

/** The row for file number n (1-based); the same on both engines. */
const HASH = (n: string) => `((${n} * 2654435761) % 4294967296)`

async function seed(db: Db): Promise<void> {
  const k = db.kysely as Kysely<Database>
  const have = await k
    .selectFrom('files')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', ACCOUNT_ID)
    .executeTakeFirst()
  if (Number(have?.n) === FILES) {
    console.log(`  [${db.engine}] reusing ${FILES.toLocaleString()} seeded files`)
    return
  }
  console.log(`  [${db.engine}] seeding ${FILES.toLocaleString()} files (first run only)...`)
  const started = Date.now()
  await k.deleteFrom('accounts').where('id', '=', ACCOUNT_ID).execute()
  const base = Date.UTC(2024, 0, 1)
  await k
    .insertInto('accounts')
    .values({ id: ACCOUNT_ID, email: 'bench@example.com', password_hash: null, created_at: base })
    .execute()
  for (let f = 0; f < FOLDERS; f++) {
    const id = `fld_bench${String(f).padStart(3, '0')}`
    await k
      .insertInto('folders')
      .values({
        id,
        account_id: ACCOUNT_ID,
        name: `Folder ${f}`,
        name_key: `folder ${f}`,
        created_at: base + f,
      })
      .execute()
  }
  if (db.engine === 'postgres') {
    // The name index takes new names one by one (migration 0005); for a million at once, defer them to its
    // pending list and merge that in one pass.
    await sql`alter index files_name_trgm set (fastupdate = on)`.execute(k)
    await sql`
      insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at)
      select 'fil_b' || lpad(n::text, 10, '0'), ${ACCOUNT_ID},
             'fld_bench' || lpad((n % ${FOLDERS})::text, 3, '0'),
             'report-' || lpad(n::text, 7, '0') || '-' || lpad(to_hex(${sql.raw(HASH('n::bigint'))}), 8, '0') || '.pdf',
             'application/pdf', 1000 + n, 'files/acc_bench/fil_b' || lpad(n::text, 10, '0'), null,
             ${base}::bigint + n, ${base}::bigint + n
      from generate_series(1, ${FILES}) as n`.execute(k)
    await sql`
      insert into shares (id, account_id, file_id, public_id, is_active, expires_at, view_count, download_count, created_at, updated_at)
      select 'shr_b' || lpad(n::text, 10, '0'), ${ACCOUNT_ID}, 'fil_b' || lpad(n::text, 10, '0'),
             'pub' || lpad(n::text, 10, '0'), true, null, n % 50, n % 7, ${base}::bigint + n, ${base}::bigint + n
      from generate_series(5, ${FILES}, 5) as n`.execute(k)
    await sql`select gin_clean_pending_list('files_name_trgm'::regclass)`.execute(k)
    await sql`alter index files_name_trgm set (fastupdate = off)`.execute(k)
    await sql`analyze`.execute(k)
  } else {
    await sql`
      with recursive seq(n) as (select 1 union all select n + 1 from seq where n < ${FILES})
      insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at)
      select printf('fil_b%010d', n), ${ACCOUNT_ID}, printf('fld_bench%03d', n % ${FOLDERS}),
             printf('report-%07d-%08x.pdf', n, ${sql.raw(HASH('n'))}),
             'application/pdf', 1000 + n, printf('files/acc_bench/fil_b%010d', n), null,
             ${base} + n, ${base} + n
      from seq`.execute(k)
    await sql`
      insert into shares (id, account_id, file_id, public_id, is_active, expires_at, view_count, download_count, created_at, updated_at)
      select 'shr_b' || substr(id, 6), account_id, id, 'pub' || substr(id, 6), 1, null, size % 50, size % 7, created_at, created_at
      from files where account_id = ${ACCOUNT_ID} and (size - 1000) % 5 = 0`.execute(k)
    await sql`analyze`.execute(k)
  }
  await sql`update folders set file_count = (select count(*) from files where files.folder_id = folders.id)
            where account_id = ${ACCOUNT_ID}`.execute(k)
  console.log(`  [${db.engine}] seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

export interface Seeded {
  db: Db
  /** The server's DATA_DIR (SQLite's file, and blobs). */
  dataDir: string
  /** PostgreSQL's database, undefined on SQLite. */
  databaseUrl: string | undefined
}

/** The engine's database, migrated, with the large account seeded (reused when already there); open. */
export async function openSeeded(engine: Engine): Promise<Seeded> {
  const dataDir = path.join(BENCH_DIR, engine)
  mkdirSync(dataDir, { recursive: true })
  const databaseUrl = engine === 'postgres' ? await ensurePgDatabase() : undefined
  const db = openDatabase({ databaseUrl, dataDir })
  await migrate(db)
  await seed(db)
  return { db, dataDir, databaseUrl }
}

// `node bench/seed.ts` seeds both engines (BENCH_ENGINES) ahead of a run.
if (import.meta.main) {
  for (const engine of (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[]) {
    const { db } = await openSeeded(engine)
    await db.close()
  }
}
