// The least a server can do to answer the benchmark's GET /files/{id} with Coffer's JSON: bare Fastify, and the
// file's row read by the SQL Coffer uses and turned into the same JSON. No authentication, rate limit,
// validation, logging or error handling. It measures what the read itself costs against the bare route, which
// no change to Coffer's own code can win back. (Coffer's response batching, src/http/response-batching.ts, made
// no measurable difference here, so it is left out.)
// Started by bench/api.ts with PORT, PUBLIC_URL and DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite, read-only).
//
// On PostgreSQL the requests of one turn of the event loop are answered by one query, as Coffer does: the
// benchmark asks for one file, so one query by that id serves them all.
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import Fastify from 'fastify'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Database } from '../src/db/schema.ts'
import { serializeFile } from '../src/files/files.routes.ts'
import { type FileRow, selectFiles, toStoredFile } from '../src/files/files.service.ts'

const config = { publicUrl: process.env.PUBLIC_URL ?? 'http://127.0.0.1' }
const databaseUrl = process.env.DATABASE_URL

/** The SQL of Coffer's file lookup, compiled for the engine; its one parameter is the file id. */
function lookupSql(kysely: Kysely<Database>): string {
  return selectFiles(kysely).where('files.id', '=', '').compile().sql
}

function sqliteLookup(): (id: string) => Promise<FileRow | undefined> {
  // Compiling needs a dialect, not a connection.
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: async () => ({}) as never }) })
  const file = path.join(process.env.DATA_DIR ?? '.', 'coffer.sqlite')
  const statement = new DatabaseSync(file, { readOnly: true }).prepare(lookupSql(kysely))
  return async (id) => statement.get(id) as FileRow | undefined
}

function postgresLookup(url: string): (id: string) => Promise<FileRow | undefined> {
  const pool = new pg.Pool({ connectionString: url, max: 10 })
  pg.types.setTypeParser(20, Number)
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  const text = lookupSql(kysely)
  const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
  let turn: Map<string, Promise<FileRow | undefined>> | undefined
  return (id) => {
    if (!turn) {
      turn = new Map()
      setImmediate(() => {
        turn = undefined
      })
    }
    let row = turn.get(id)
    if (!row) {
      const query = { name: 'file_by_id', text, values: [id] }
      row = endOfTurn().then(async () => (await pool.query(query)).rows[0])
      turn.set(id, row)
    }
    return row
  }
}

const lookup = databaseUrl ? postgresLookup(databaseUrl) : sqliteLookup()
const app = Fastify({ logger: false })
app.get('/files/:id', async (request) => {
  const row = await lookup((request.params as { id: string }).id)
  return { data: row && serializeFile(toStoredFile(row), config) }
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
