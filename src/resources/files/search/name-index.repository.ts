// The name index: for each account, which of its files hold each gram of a name (name-grams.ts), kept by
// blocks of BLOCK_SIZE files in the order the account made them, so that a search reads the matches of its
// newest blocks first and stops when it has a page (name-search.ts).
//
// Each file has a number in its account (`files.seq`, given by `allocate` in the transaction that makes it),
// and lies in block seq / BLOCK_SIZE at slot seq % BLOCK_SIZE. The index takes the files a chunk of CHUNK_SIZE
// at a time, once the chunk is full (`foldFull`): a row per gram that any of the block's names hold, with the
// set of slots, and one per folder of its files; a chunk in a block begun before extends its rows.
// `accounts.name_indexed` is how many of the account's files the index holds; the search reads the rows of the
// files after them (fewer than CHUNK_SIZE, and those of chunks the job has not written yet). A name or folder
// changed later adds the file's slot to the rows of its new grams (`refile`); the slots it leaves behind, and
// a deleted file's, stay: the search, which checks every candidate's row, passes over them. `name_stale` counts
// them per block, and once a block has STALE_TO_REWRITE the job writes it again from its files
// (`rewriteStale`), so that deletions and renames cost searches little and the counts stay near. Block -1
// counts each gram's files over all blocks, for the search to read the rarest grams first.
import { type SqlBool, sql } from 'kysely'
import type { Db, Executor, Transaction } from '../../../platform/db/database.ts'
import type { Engine } from '../../../platform/db/engine.ts'
import {
  addSlot,
  BLOCK_SIZE,
  CHUNK_SIZE,
  decodeSlots,
  emptySlots,
  encodeAscending,
  encodeSlots,
  folderGram,
  foldName,
  forEachGram,
  slotCount,
  slotsAscending,
} from './name-grams.ts'

/** The block that counts each gram's files over all the account's blocks. */
export const COUNTS_BLOCK = -1

/**
 * Slots left behind in a block that make the job write it again: an eighth of a block, which a search's
 * candidates hold at most that many more of; a block's rewrite reads its files and writes its rows (about a
 * second on SQLite, whose one writer it holds).
 */
const STALE_TO_REWRITE = BLOCK_SIZE / 8

export class NameIndex {
  readonly #db: Db

  constructor(db: Db) {
    this.#db = db
  }

  /**
   * The number and creation time of the account's next file, in the transaction that inserts it. It takes
   * the account row's lock until the transaction ends, so the account's files are numbered in the order they
   * commit, and made at times that increase with their numbers: the clock's, or a millisecond after the last
   * file's when the clock is behind it (another process's clock, or the same millisecond).
   */
  async allocate(
    trx: Transaction,
    accountId: string,
    now: number,
  ): Promise<{ seq: number; createdAt: number }> {
    const row = await trx
      .updateTable('accounts')
      .set((eb) => ({
        file_seq: eb('file_seq', '+', 1),
        last_file_at: sql`case when last_file_at >= ${now} then last_file_at + 1 else ${now} end`,
      }))
      .where('id', '=', accountId)
      .returning(['file_seq', 'last_file_at'])
      .executeTakeFirstOrThrow()
    return { seq: Number(row.file_seq) - 1, createdAt: Number(row.last_file_at) }
  }

  /**
   * After files' names or folders changed, in that transaction: for each file the index holds already,
   * adds its slot to the rows of `grams` (those of its new name, or its new folder's); those of before stay,
   * and are passed over. Takes the account row's lock, as `foldFull` does, so that two changes in one block
   * do not write over each other's slots.
   */
  async refile(trx: Transaction, accountId: string, files: { seq: number | null; grams: Set<string> }[]) {
    const { indexed } = await lockAccount(trx, accountId)
    const indexedFiles = files.flatMap(({ seq, grams }) =>
      seq !== null && seq < indexed ? [{ seq, grams }] : [],
    )
    // The slots of their names or folders of before stay behind.
    await this.markStale(
      trx,
      accountId,
      indexedFiles.map((file) => file.seq),
    )
    for (const file of indexedFiles) {
      if (file.grams.size === 0) continue
      const block = Math.floor(file.seq / BLOCK_SIZE)
      const grams = [...file.grams]
      const stored = new Map<string, Uint8Array>()
      const held = await trx
        .selectFrom('name_grams')
        .select(['gram', 'slots'])
        .where('account_id', '=', accountId)
        .where('block', '=', block)
        .where('gram', 'in', grams)
        .execute()
      for (const row of held) stored.set(row.gram, row.slots)
      const rows: GramRow[] = []
      for (const gram of grams) {
        const before = stored.get(gram)
        const slots = before ? decodeSlots(before) : emptySlots()
        const count = slotCount(slots)
        addSlot(slots, file.seq % BLOCK_SIZE)
        if (slotCount(slots) > count) rows.push({ gram, block, stored: encodeSlots(slots), files: count + 1 })
      }
      await writeRows(trx, this.#db.engine, accountId, rows)
      await addToCounts(
        trx,
        this.#db.engine,
        accountId,
        rows.map((row) => ({ gram: row.gram, files: 1 })),
      )
    }
  }

  /**
   * In the transaction that deletes, renames or moves these files (by number): counts the slots they leave
   * behind in their blocks. Those of files the index does not hold yet are counted too, a few too many at most.
   */
  async markStale(trx: Transaction, accountId: string, seqs: (number | string | null)[]): Promise<void> {
    const perBlock = new Map<number, number>()
    for (const seq of seqs) {
      if (seq === null) continue
      const block = Math.floor(Number(seq) / BLOCK_SIZE)
      perBlock.set(block, (perBlock.get(block) ?? 0) + 1)
    }
    if (perBlock.size === 0) return
    await trx
      .insertInto('name_stale')
      .values([...perBlock].map(([block, slots]) => ({ account_id: accountId, block, slots })))
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'block'])
          .doUpdateSet((eb) => ({ slots: eb('name_stale.slots', '+', eb.ref('excluded.slots')) })),
      )
      .execute()
  }

  /**
   * Writes again, from their files, the blocks with `atLeast` slots left behind (STALE_TO_REWRITE), a block to
   * a transaction; returns how many it wrote.
   */
  async rewriteStale(atLeast = STALE_TO_REWRITE): Promise<number> {
    const stale = await this.#db.kysely
      .selectFrom('name_stale')
      .select(['account_id', 'block'])
      .where('slots', '>=', atLeast)
      .execute()
    for (const { account_id: accountId, block } of stale) {
      await this.#db.transaction((trx) => rewriteBlock(trx, this.#db.engine, accountId, Number(block)))
    }
    return stale.length
  }

  /**
   * Writes the account's full chunks that the index does not hold yet, `atOnce` to a transaction; returns how
   * many it wrote. Any process may call it at any time: the account row's lock makes one write each chunk.
   * Several chunks at once write each gram's rows side by side, several times faster for many (after migration
   * 0021, or seeding); one keeps the transaction, and SQLite's one writer, short.
   */
  async foldFull(accountId: string, atOnce = 1): Promise<number> {
    let written = 0
    for (;;) {
      const chunks = await this.#db.transaction((trx) => foldNext(trx, this.#db.engine, accountId, atOnce))
      if (chunks === 0) return written
      written += chunks
    }
  }

  /** `foldFull` for every account with a full chunk to write. */
  async foldAll(atOnce = 1): Promise<number> {
    const accounts = await this.#db.kysely
      .selectFrom('accounts')
      .select('id')
      .where(sql<SqlBool>`file_seq >= name_indexed + ${sql.lit(CHUNK_SIZE)}`)
      .execute()
    let written = 0
    for (const account of accounts) written += await this.foldFull(account.id, atOnce)
    return written
  }

  /**
   * Numbers the account's files again in (created_at, id) order and empties its index, for `foldFull` to
   * write again: after files were written to the table another way than `FilesRepository.insert` (a test's
   * or benchmark's thousands of rows), or to clear the slots of many deleted files.
   */
  async rebuild(accountId: string): Promise<void> {
    await this.#db.transaction(async (trx) => {
      await lockAccount(trx, accountId)
      await trx.deleteFrom('name_grams').where('account_id', '=', accountId).execute()
      await trx.deleteFrom('name_stale').where('account_id', '=', accountId).execute()
      await sql`update files set seq = numbered.n
        from (select id, row_number() over (order by created_at, id) - 1 as n
              from files where account_id = ${accountId}) as numbered
        where files.id = numbered.id`.execute(trx)
      await sql`update accounts set name_indexed = 0,
        file_seq = (select count(*) from files where files.account_id = accounts.id),
        last_file_at = coalesce((select max(created_at) from files where files.account_id = accounts.id), 0)
        where id = ${accountId}`.execute(trx)
    })
  }
}

/** Locks the account row until the transaction ends; how many files the index holds, and there are. */
async function lockAccount(trx: Transaction, accountId: string): Promise<{ indexed: number; files: number }> {
  const row = await trx
    .updateTable('accounts')
    .set((eb) => ({ name_indexed: eb.ref('name_indexed') }))
    .where('id', '=', accountId)
    .returning(['name_indexed', 'file_seq'])
    .executeTakeFirstOrThrow()
  return { indexed: Number(row.name_indexed), files: Number(row.file_seq) }
}

/** Writes the account's next full chunks not written yet, at most `most`; how many it wrote. */
async function foldNext(trx: Transaction, engine: Engine, accountId: string, most: number): Promise<number> {
  const { indexed, files } = await lockAccount(trx, accountId)
  const chunks = Math.min(most, Math.floor((files - indexed) / CHUNK_SIZE))
  if (chunks <= 0) return 0
  const end = indexed + chunks * CHUNK_SIZE
  const byGram = await gramsOfFiles(trx, accountId, indexed, end)
  // The block begun before (when the first chunk is not the first of its block) keeps its slots, all lower.
  const begun = indexed % BLOCK_SIZE === 0 ? undefined : Math.floor(indexed / BLOCK_SIZE)
  const before =
    begun === undefined
      ? new Map<string, Uint8Array>()
      : await readBlock(trx, engine, accountId, begun, byGram)
  const rows = gramRows(byGram, (gram, block) => (block === begun ? before.get(gram) : undefined))
  await writeRows(trx, engine, accountId, rows)
  await addToCounts(
    trx,
    engine,
    accountId,
    [...byGram].map(([gram, held]) => ({ gram, files: held.length })),
  )
  await trx.updateTable('accounts').set({ name_indexed: end }).where('id', '=', accountId).execute()
  return chunks
}

/**
 * Writes one block again from its files (those the index holds): its rows replaced, the counts moved by the
 * difference, its slots left behind forgotten.
 */
async function rewriteBlock(
  trx: Transaction,
  engine: Engine,
  accountId: string,
  block: number,
): Promise<void> {
  const { indexed } = await lockAccount(trx, accountId)
  const first = block * BLOCK_SIZE
  const byGram = await gramsOfFiles(trx, accountId, first, Math.min(indexed, first + BLOCK_SIZE))
  const before = await trx
    .deleteFrom('name_grams')
    .where('account_id', '=', accountId)
    .where('block', '=', block)
    .returning(['gram', 'files'])
    .execute()
  const change = new Map<string, number>()
  for (const row of before) change.set(row.gram, -Number(row.files))
  for (const [gram, held] of byGram) change.set(gram, (change.get(gram) ?? 0) + held.length)
  await writeRows(trx, engine, accountId, gramRows(byGram))
  await addToCounts(
    trx,
    engine,
    accountId,
    [...change].filter(([, files]) => files !== 0).map(([gram, files]) => ({ gram, files })),
  )
  await trx.deleteFrom('name_stale').where('account_id', '=', accountId).where('block', '=', block).execute()
}

/**
 * The grams of the account's files numbered `from` to `to` (excluded), each with the numbers of its files in
 * ascending order: the files are read in that order, each added once.
 */
async function gramsOfFiles(
  trx: Transaction,
  accountId: string,
  from: number,
  to: number,
): Promise<Map<string, number[]>> {
  const members = await trx
    .selectFrom('files')
    .select(['seq', 'name', 'folder_id'])
    .where('account_id', '=', accountId)
    .where('seq', '>=', from)
    .where('seq', '<', to)
    .orderBy('seq')
    .execute()
  const byGram = new Map<string, number[]>()
  for (const file of members) {
    const seq = Number(file.seq)
    const add = (gram: string) => {
      const held = byGram.get(gram)
      if (!held) byGram.set(gram, [seq])
      else if (held.at(-1) !== seq) held.push(seq)
    }
    forEachGram(foldName(file.name), add)
    if (file.folder_id !== null) add(folderGram(file.folder_id))
  }
  return byGram
}

/**
 * The rows of these grams' files, per block, in the index's order (gram then block, so that each gram's rows
 * are written side by side); a block's row extends the slots `kept` gives for it, which are all lower.
 */
function gramRows(
  byGram: Map<string, number[]>,
  kept: (gram: string, block: number) => Uint8Array | undefined = () => undefined,
): GramRow[] {
  const rows: GramRow[] = []
  for (const gram of [...byGram.keys()].sort()) {
    const held = byGram.get(gram) as number[]
    for (let start = 0; start < held.length; ) {
      const block = Math.floor((held[start] as number) / BLOCK_SIZE)
      let end = start
      while (end < held.length && Math.floor((held[end] as number) / BLOCK_SIZE) === block) end++
      const added = held.slice(start, end).map((seq) => seq % BLOCK_SIZE)
      const before = kept(gram, block)
      const slots = before ? [...slotsAscending(before), ...added] : added
      rows.push({ gram, block, stored: encodeAscending(slots), files: slots.length })
      start = end
    }
  }
  return rows
}

/** The stored slots of these grams in one block of the account, by gram. */
async function readBlock(
  trx: Transaction,
  engine: Engine,
  accountId: string,
  block: number,
  grams: Map<string, unknown>,
): Promise<Map<string, Uint8Array>> {
  const list = [...grams.keys()]
  // The grams as one parameter, as in `writeRows`: a chunk holds thousands.
  const inList =
    engine === 'postgres'
      ? sql<SqlBool>`gram = any(${list}::text[])`
      : sql<SqlBool>`gram in (select value from json_each(${JSON.stringify(list)}))`
  const rows = await trx
    .selectFrom('name_grams')
    .select(['gram', 'slots'])
    .where('account_id', '=', accountId)
    .where('block', '=', block)
    .where(inList)
    .execute()
  return new Map(rows.map((row) => [row.gram, row.slots]))
}

interface GramRow {
  gram: string
  block: number
  /** The slots as `encodeSlots` stores them. */
  stored: Uint8Array
  files: number
}

/**
 * Writes (or replaces) these rows of blocks, in one statement however many: the rows as arrays
 * (PostgreSQL) or JSON (SQLite), a block's thousands of rows being too many for a statement's parameters.
 */
async function writeRows(trx: Executor, engine: Engine, accountId: string, rows: GramRow[]) {
  if (rows.length === 0) return
  const upsert = sql`on conflict (account_id, gram, block) do update set files = excluded.files, slots = excluded.slots`
  if (engine === 'postgres') {
    const slots = rows.map(({ stored }) => Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength))
    await sql`insert into name_grams (account_id, gram, block, files, slots)
      select ${accountId}, gram, block, files, slots
      from unnest(${rows.map((row) => row.gram)}::text[], ${rows.map((row) => row.block)}::int[],
        ${rows.map((row) => row.files)}::int[], ${slots}::bytea[]) as row (gram, block, files, slots)
      ${upsert}`.execute(trx)
    return
  }
  const json = JSON.stringify(
    rows.map(({ gram, block, files, stored }) => [gram, block, files, Buffer.from(stored).toString('hex')]),
  )
  // `where true`: SQLite's parser needs it before an upsert's ON CONFLICT.
  await sql`insert into name_grams (account_id, gram, block, files, slots)
    select ${accountId}, value ->> 0, value ->> 1, value ->> 2, unhex(value ->> 3) from json_each(${json}) where true
    ${upsert}`.execute(trx)
}

/** Adds to the grams' counts of files (COUNTS_BLOCK), in one statement as `writeRows`. */
async function addToCounts(
  trx: Executor,
  engine: Engine,
  accountId: string,
  counts: { gram: string; files: number }[],
) {
  if (counts.length === 0) return
  const upsert = sql`on conflict (account_id, gram, block) do update set files = name_grams.files + excluded.files`
  if (engine === 'postgres') {
    await sql`insert into name_grams (account_id, gram, block, files, slots)
      select ${accountId}, gram, ${sql.lit(COUNTS_BLOCK)}, files, ''::bytea
      from unnest(${counts.map((count) => count.gram)}::text[], ${counts.map((count) => count.files)}::int[])
        as count (gram, files)
      ${upsert}`.execute(trx)
    return
  }
  const json = JSON.stringify(counts.map(({ gram, files }) => [gram, files]))
  await sql`insert into name_grams (account_id, gram, block, files, slots)
    select ${accountId}, value ->> 0, ${sql.lit(COUNTS_BLOCK)}, value ->> 1, x'' from json_each(${json}) where true
    ${upsert}`.execute(trx)
}
