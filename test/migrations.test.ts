// Migrations run by several processes at once on a new database: the command-line tool beside a server that
// starts, or a fleet's processes started together. Each must find the schema whole, none must fail on what
// another has just done (issue 41: "migration 0013 … duplicate column name: crc32" on SQLite). On each engine.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { cli } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'

for (const engine of ENGINES) {
  test(`four processes migrating a new database at once all succeed [${engine}]`, async () => {
    for (let round = 0; round < 2; round++) {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migrate-'))
      const database = await freshDatabase(engine, dataDir)
      try {
        const storage = { dataDir, databaseUrl: database.url }
        const runs = await Promise.all(
          Array.from({ length: 4 }, (_, i) =>
            cli(storage, ['accounts', 'create', '--email', `m${round}-${i}@example.com`, '--json']),
          ),
        )
        for (const [i, run] of runs.entries()) assert.equal(run.code, 0, `process ${i}: ${run.stderr}`)
        const listed = await cli(storage, ['accounts', 'list', '--json'])
        assert.equal(listed.code, 0, listed.stderr)
        assert.equal(JSON.parse(listed.stdout).accounts.length, 4)
      } finally {
        await database.drop()
        await rm(dataDir, { recursive: true, force: true })
      }
    }
  })
}
