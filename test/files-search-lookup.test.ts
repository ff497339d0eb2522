// The trigram index is asked for a search query's uncommon part (src/files/name-sample.ts), by how common each
// trigram is among a sample of all accounts' names. A file of its own: the sample is of the whole database,
// which here holds this test's names alone.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nameSearch } from '../src/files/name-search.ts'
import { insertFiles } from './support/files-helpers.ts'
import { createAccount, describeEachEngine } from './support/harness.ts'

describeEachEngine(
  'files search lookup',
  (ctx) => {
    test("search asks the trigram index for the query's uncommon part and tests the whole query", async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      // `invoice-` is in every name and `-11` in a quarter; `117` and `177` in 3 % and less. A memo holds `1177`.
      await insertFiles(c, a.id, [1000, 1399], ['invoice-', '.pdf'])
      await insertFiles(c, a.id, [5000, 5000], ['memo-1177-', '.txt'])
      const readThroughBitmaps = c.db.readThroughBitmaps
      const asked: unknown[][] = []
      c.db.readThroughBitmaps = async (query, name) => {
        asked.push([...query.parameters])
        return readThroughBitmaps(query, name)
      }
      try {
        // A search of its own, whose sample of names is read now, from these.
        const search = nameSearch(c.db)
        /** The ids a search finds, and the parameters of the index step's statements it ran. */
        const searchFor = async (query: string) => {
          asked.length = 0
          const page = await search({
            accountId: a.id,
            query,
            folderId: undefined,
            cursor: undefined,
            limit: 10,
          })
          assert.equal(page.nextCursor, null)
          return { ids: page.items, asked: asked.flat() }
        }
        const invoice = await searchFor('Invoice-1177')
        assert.deepEqual(invoice.ids, [`fil_${a.id}_1177`])
        assert.ok(
          invoice.asked.includes(c.engine === 'sqlite' ? '"1177"' : '%1177%'),
          JSON.stringify(invoice),
        )
        // PostgreSQL is asked without the part's outer characters other than letters and digits: pg_trgm
        // would look up the trigrams of a word's end too.
        const trimmed = await searchFor('-1177.')
        assert.deepEqual(trimmed.ids, [`fil_${a.id}_1177`])
        assert.ok(
          trimmed.asked.includes(c.engine === 'sqlite' ? '"1177."' : '%1177%'),
          JSON.stringify(trimmed),
        )
        // The memo was a candidate, and the whole query's test left it out.
        assert.deepEqual((await searchFor('mo-1177')).ids, [`fil_${a.id}_5000`])
      } finally {
        c.db.readThroughBitmaps = readThroughBitmaps
      }
    })
  },
  // As in files-search.test.ts: a busy machine must not make the index step give way.
  { database: { bitmapReadTimeoutMs: 1_000 } },
)
