// Name search at scale (issue 25): every kind of query, on an account of N files (bench/seed.ts) while another
// account holds N more with the same names, on both engines.
//   npm run bench:search -- [--files 1000000]        (BENCH_ENGINES, BENCH_SECONDS)
// For each kind, with and without a folder:
// - the answer: every page followed as a client must (at most MAX_PAGES), checked against a plain scan of the
//   account's rows (the count and the ids, in order): a page may be empty only when it is the last, and a
//   query may take no more pages than its matches fill. Checked alone and again under the hard load below,
//   so an answer that changes with the load fails too;
// - the speed: wrk, 8 connections, asking for the pages followed in turn (so deep pages count as much as the
//   first), alone and while a second wrk (4 connections) asks for the pages of the hard kinds.
// Lists too (their newest pages, and pages from the middle of the account on, with a cursor), and the practical
// limit: a bare Fastify route answering a page of 100 files from memory.
// A wrong answer is printed as such and makes the run exit 1: a fast wrong answer is no figure.
// The data set is kept under .bench/search-<N> (PostgreSQL: the database coffer_search_<N>) for later runs.
import { writeFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/database.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import { encodeCursor } from '../src/platform/db/pagination.ts'
import { wireAccounts } from '../src/wiring.ts'
import {
  freePort,
  requireWrk,
  startChild,
  stopChild,
  type WrkFigures,
  waitForServer,
  wrk,
} from './processes.ts'
import {
  ACCOUNT_ID,
  BENCH_DIR,
  createdAtOf,
  fileIdOf,
  fileNameOf,
  folderIdOf,
  openSeeded,
  seedAccount,
  seededServerEnv,
  storageSizes,
} from './seed.ts'

const { values } = parseArgs({ options: { files: { type: 'string', default: '1000000' } } })
const FILES = Number(values.files)
const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[]
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = 8
const LOAD_CONNECTIONS = 4
const LIMIT = 100
/** The most pages followed (and asked for by wrk) of one query: 10,000 matches. */
const MAX_PAGES = 100
const SET = `search-${FILES}`
const FOLDER = folderIdOf(ACCOUNT_ID, 42)

interface Kind {
  name: string
  /** None: a list. */
  query?: string
  /** A list from the cursor of this seeded file on, as a client deep in the pages asks. */
  from?: number
  folderId?: string
  /** Part of the concurrent load. */
  hard?: boolean
}

const pad7 = (n: number) => String(n).padStart(7, '0')

/** The queries, each alone and in one folder. */
function kindsOf(files: number): Kind[] {
  const base: Kind[] = [
    { name: '1 character, in most names', query: '7' },
    { name: '1 character, no match', query: 'z', hard: true },
    { name: '2 characters, in many names', query: '7D' },
    { name: '2 characters, no match', query: 'zz', hard: true },
    { name: 'in every name', query: '.pdf' },
    {
      name: `in the oldest ${Math.min(files, 99_999).toLocaleString('en')} names`,
      query: 'report-00',
      hard: true,
    },
    // Every trigram of it is in a tenth of the names or more; one name holds them in this order.
    { name: 'common trigrams, 1 match', query: `report-${pad7(Math.floor(files / 2) + 1)}`, hard: true },
    { name: 'a hash fragment, few matches', query: fileNameOf(Math.floor(files / 3)).slice(15, 20) },
    { name: 'no match', query: 'report-x', hard: true },
    { name: 'list, the newest pages' },
    { name: 'list, pages from the middle', from: Math.floor(files / 2) },
  ]
  return [...base, ...base.map((kind) => ({ ...kind, name: `${kind.name}, in a folder`, folderId: FOLDER }))]
}

const pathOf = (kind: Kind, cursor?: string) =>
  `/api/v1/files?${new URLSearchParams({
    ...(kind.query === undefined ? {} : { query: kind.query }),
    limit: String(LIMIT),
    ...(kind.folderId ? { folderId: kind.folderId } : {}),
    ...(cursor ? { cursor } : {}),
  })}`

/** The cursor a client holds after seeded file n, in the lists' order. */
const cursorAfter = (n: number) => encodeCursor({ createdAt: createdAtOf(n), id: fileIdOf(ACCOUNT_ID, n) })

/** What a plain scan of the account's rows finds: the count, and the first MAX_PAGES pages' ids. */
async function plainScan(db: Db, kind: Kind): Promise<{ count: number; ids: string[] }> {
  // Lower-cased on both sides: the names and queries here are ASCII, where both engines' lower() agree.
  const contains =
    kind.query === undefined
      ? sql`true`
      : db.engine === 'postgres'
        ? sql`strpos(lower(name), lower(${kind.query})) > 0`
        : sql`instr(lower(name), lower(${kind.query})) > 0`
  const folder = kind.folderId ? sql`and folder_id = ${kind.folderId}` : sql``
  const from = kind.from === undefined ? sql`` : sql`and created_at < ${createdAtOf(kind.from)}`
  const where = sql`account_id = ${ACCOUNT_ID} ${folder} ${from} and ${contains}`
  const counted = await sql<{ n: number }>`select count(*) as n from files where ${where}`.execute(db.kysely)
  const ids = await sql<{ id: string }>`select id from files where ${where}
    order by created_at desc, id desc limit ${MAX_PAGES * LIMIT}`.execute(db.kysely)
  return { count: Number(counted.rows[0]?.n), ids: ids.rows.map((row) => row.id) }
}

interface Followed {
  paths: string[]
  /** What is wrong with the answer; empty when it is right. */
  problems: string[]
}

/** Follows the kind's pages as a client must, and compares them with the scan. */
async function follow(
  base: string,
  headers: Record<string, string>,
  kind: Kind,
  expected: { count: number; ids: string[] },
): Promise<Followed> {
  const paths: string[] = []
  const problems: string[] = []
  const got: string[] = []
  let cursor = kind.from === undefined ? undefined : cursorAfter(kind.from)
  do {
    const pagePath = pathOf(kind, cursor)
    paths.push(pagePath)
    const answer = await fetch(base + pagePath, { headers })
    if (answer.status !== 200) {
      problems.push(`page ${paths.length}: ${answer.status} ${await answer.text()}`)
      break
    }
    const page = (await answer.json()) as {
      data: { id: string }[]
      pagination: { nextCursor: string | null }
    }
    cursor = page.pagination.nextCursor ?? undefined
    if (page.data.length === 0 && cursor) problems.push(`page ${paths.length} is empty but not the last`)
    got.push(...page.data.map((file) => file.id))
  } while (cursor && paths.length < MAX_PAGES)
  const complete = !cursor
  const needed = Math.max(1, Math.ceil(expected.count / LIMIT))
  if (complete && paths.length > needed) problems.push(`${paths.length} pages for ${expected.count} matches`)
  if (complete && got.length !== expected.count)
    problems.push(`${got.length} matches, the scan finds ${expected.count}`)
  const differs = got.findIndex((id, i) => id !== expected.ids[i])
  if (differs >= 0)
    problems.push(`match ${differs + 1} is ${got[differs]}, the scan's is ${expected.ids[differs]}`)
  if (!complete && got.length < paths.length * LIMIT)
    problems.push(`${got.length} matches in ${paths.length} pages`)
  return { paths, problems: [...new Set(problems)].slice(0, 3) }
}

interface Row {
  kind: Kind
  matches: number
  pages: number
  alone: WrkFigures
  /** Under the hard load; none for the bare route, which that load does not reach. */
  loaded?: WrkFigures
  problems: string[]
}

async function benchEngine(engine: Engine): Promise<Row[]> {
  const { db, dataDir, databaseUrl } = await openSeeded(engine, { files: FILES, set: SET })
  const other = await seedAccount(db, {
    email: 'other@example.com',
    files: FILES,
    progress: (line) => console.log(`  [${engine}] other account:${line}`),
  })
  if (other.added > 0) console.log(`  [${engine}] other account seeded in ${other.seconds.toFixed(1)} s`)
  for (const { name, bytes } of await storageSizes(db)) {
    console.log(`  [${engine}] ${name.padEnd(36)} ${(bytes / 1024 / 1024).toFixed(0).padStart(7)} MiB`)
  }
  const { secret } = await wireAccounts(db).apiKeys.create({
    accountId: ACCOUNT_ID,
    name: 'bench',
    scopes: ['files:read'],
  })
  const kinds = kindsOf(FILES)
  const scans = new Map<Kind, { count: number; ids: string[] }>()
  for (const kind of kinds) scans.set(kind, await plainScan(db, kind))
  await db.close()

  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const server = startChild('src/server.ts', seededServerEnv({ dataDir, databaseUrl }, base, port))
  const headers = { authorization: `Bearer ${secret}` }
  const headerLines = [`authorization: Bearer ${secret}`]
  const dir = path.join(BENCH_DIR, SET, `paths-${engine}`)
  await mkdir(dir, { recursive: true })
  try {
    await waitForServer(`${base}/healthz`, server)
    const followed = new Map<Kind, Followed>()
    for (const kind of kinds) followed.set(kind, await follow(base, headers, kind, scans.get(kind) as never))
    const pathsFile = (name: string, paths: string[]) => {
      const file = path.join(dir, `${name}.txt`)
      writeFileSync(file, `${paths.join('\n')}\n`)
      return file
    }
    const hardPaths = pathsFile(
      'hard',
      kinds.filter((kind) => kind.hard).flatMap((kind) => followed.get(kind)?.paths ?? []),
    )
    const underLoad = async <T>(work: () => Promise<T>): Promise<T> => {
      const load = wrk(base, LOAD_CONNECTIONS, SECONDS + 3, headerLines, hardPaths)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      try {
        return await work()
      } finally {
        await load
      }
    }
    const rows: Row[] = []
    for (const [i, kind] of kinds.entries()) {
      const { paths, problems } = followed.get(kind) as Followed
      const file = pathsFile(String(i), paths)
      await wrk(base, CONNECTIONS, 1, headerLines, file)
      const alone = await wrk(base, CONNECTIONS, SECONDS, headerLines, file)
      const loaded = await underLoad(() => wrk(base, CONNECTIONS, SECONDS, headerLines, file))
      // The same answer while the hard kinds run.
      const again = await underLoad(() => follow(base, headers, kind, scans.get(kind) as never))
      const allProblems = [...problems, ...again.problems.map((problem) => `under load: ${problem}`)]
      if (alone.errors + loaded.errors > 0)
        allProblems.push(`${alone.errors + loaded.errors} failed requests`)
      const row = {
        kind,
        matches: scans.get(kind)?.count ?? 0,
        pages: paths.length,
        alone,
        loaded,
        problems: allProblems,
      }
      rows.push(row)
      console.log(
        `  [${engine}] ${kind.name} (${kind.query === undefined ? 'a list' : JSON.stringify(kind.query)}): ${row.matches} matches, ${row.pages} pages, ` +
          `p99 ${alone.p99} ms alone, ${loaded.p99} ms under load${allProblems.length ? `; WRONG: ${allProblems.join('; ')}` : ''}`,
      )
    }
    rows.push(await bareRoute(base, headers))
    return rows
  } finally {
    await stopChild(server)
  }
}

/**
 * The practical limit in the same run: a bare Fastify route answering a page of 100 files (the first of a
 * search in every name, as Coffer sent it) from memory, at the same connections, alone and under the same load.
 */
async function bareRoute(base: string, headers: Record<string, string>): Promise<Row> {
  const kind: Kind = { name: 'bare Fastify route, the same JSON (100 files)' }
  const page = await fetch(base + pathOf({ name: '', query: '.pdf' }), { headers })
  const port = await freePort()
  const bare = startChild('bench/bare-server.ts', { PORT: String(port), BODY: await page.text() })
  try {
    const url = `http://127.0.0.1:${port}/`
    await waitForServer(url, bare)
    await wrk(url, CONNECTIONS, 1)
    const alone = await wrk(url, CONNECTIONS, SECONDS)
    return { kind, matches: 0, pages: 1, alone, problems: [] }
  } finally {
    await stopChild(bare)
  }
}

await requireWrk()
console.log(
  `Coffer search benchmark: ${FILES.toLocaleString('en')} files in the account and as many in another, ` +
    `wrk, ${CONNECTIONS} connections (under load: ${LOAD_CONNECTIONS} more on the hard kinds), ${SECONDS} s each`,
)
let wrong = 0
for (const engine of ENGINES) {
  const rows = await benchEngine(engine)
  console.log(
    `\n| ${engine}, ${FILES.toLocaleString('en')} files | matches | pages | p50 ms | p99 ms | req/s | p99 under load | answer |`,
  )
  console.log('|---|---:|---:|---:|---:|---:|---:|---|')
  for (const row of rows) {
    console.log(
      `| ${row.kind.name} | ${row.matches.toLocaleString('en')} | ${row.pages}${row.pages === MAX_PAGES ? '+' : ''} | ` +
        `${row.alone.p50} | ${row.alone.p99} | ${Math.round(row.alone.rps).toLocaleString('en')} | ${row.loaded?.p99 ?? '–'} | ` +
        `${row.problems.length ? 'WRONG' : 'right'} |`,
    )
  }
  console.log('')
  wrong += rows.filter((row) => row.problems.length > 0).length
}
if (wrong > 0) {
  console.log(`${wrong} answers were wrong (see above)`)
  process.exitCode = 1
}
