// The contract of src/platform/blob/blob-store.ts as tests. Every BlobStore driver runs this suite unchanged from its
// own test file: `blobStoreSuite('S3BlobStore', async () => ({ store, cleanup }))`. Each test works under
// keys of its own, so tests share one store and do not depend on each other or on their order.
// Multipart uploads are in blob-store-multipart.suite.ts, which this suite runs in its place.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import {
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  InvalidBlobKeyError,
  MAX_KEY_LENGTH,
} from '../src/platform/blob/blob-store.ts'
import { multipartUploadsSuite } from './blob-store-multipart.suite.ts'
import { chunksOf, failingAfter, MiB, readAll, scope } from './support/blob-store-helpers.ts'

export interface StoreUnderTest {
  store: BlobStore
  /** Removes everything the store created; may also assert driver invariants (e.g. no temporary files). */
  cleanup(): Promise<void>
}

// `node --test` gives no way to pass --expose-gc to one file; V8 accepts the flag at run time, and a new
// context then carries `gc`. Without it, RSS would count garbage the collector has not got round to.
setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

/** Resident memory after a full collection: what the process really holds. */
function liveRss(): number {
  collectGarbage()
  return process.memoryUsage.rss()
}

const INVALID_KEYS: [string, string][] = [
  ['empty', ''],
  ['dot', '.'],
  ['dot dot', '..'],
  ['parent prefix', '../x'],
  ['parent inside', 'a/../b'],
  ['current inside', 'a/./b'],
  ['absolute', '/abs'],
  ['empty segment', 'a//b'],
  ['trailing slash', 'a/'],
  ['backslash', 'a\\b'],
  ['NUL', 'a\0b'],
  ['newline', 'a\nb'],
  ['space', 'a b'],
  ['dot in a segment', 'a/b.txt'],
  ['leading dot', '.tmp/x'],
  ['uppercase', 'Files/a'],
  ['non-ASCII', 'fïle'],
  ['percent encoding', 'a%2f..'],
  ['segment starting with "-"', 'a/-b'],
  ['segment over 200 characters', `a/${'b'.repeat(201)}`],
  ['key over 768 characters', Array.from({ length: 5 }, () => 'c'.repeat(160)).join('/')],
  ['very long', 'd'.repeat(100_000)],
]

export interface StoreRules {
  /**
   * The fewest bytes a part may hold, but the last one of an upload: 0 (any) unless the store has a bound of
   * its own, as S3 has (5 MiB).
   */
  minPartBytes: number
  /** Whether `completeMultipart` gives the blob's SHA-256 (the local disk does; S3's driver does not). */
  hashesMultipart: boolean
}

export function blobStoreSuite(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
  rules: StoreRules = { minPartBytes: 0, hashesMultipart: true },
): void {
  describe(`BlobStore contract: ${name}`, () => {
    let under: StoreUnderTest | undefined
    const store = (): BlobStore => {
      assert.ok(under, 'store not created')
      return under.store
    }
    before(async () => {
      under = await makeStore()
    })
    after(async () => {
      await under?.cleanup()
    })

    describe('round trip', () => {
      const content = randomBytes(100_000)

      test('from a Buffer', async () => {
        const key = `${scope()}/buffer`
        assert.deepEqual(await store().put(key, content), { size: content.length })
        assert.deepEqual(await store().stat(key), { size: content.length })
        assert.deepEqual(await readAll(await store().get(key)), content)
      })

      test('from a Readable', async () => {
        const key = `${scope()}/readable`
        const source = Readable.from([content.subarray(0, 1000), content.subarray(1000)])
        assert.deepEqual(await store().put(key, source), { size: content.length })
        assert.deepEqual(await readAll(await store().get(key)), content)
      })

      test('from an async iterable', async () => {
        const key = `${scope()}/iterable`
        assert.deepEqual(await store().put(key, chunksOf(content, 7777)), { size: content.length })
        assert.deepEqual(await readAll(await store().get(key)), content)
      })

      test('an empty blob, from a Buffer, a Readable and an empty iterable', async () => {
        const prefix = scope()
        const sources = {
          buffer: Buffer.alloc(0),
          readable: Readable.from([]),
          iterable: (async function* () {})(),
        }
        for (const [kind, source] of Object.entries(sources)) {
          const key = `${prefix}/${kind}`
          assert.deepEqual(await store().put(key, source), { size: 0 }, kind)
          assert.deepEqual(await store().stat(key), { size: 0 }, kind)
          assert.deepEqual(await readAll(await store().get(key)), Buffer.alloc(0), kind)
        }
      })

      test('64 MiB streamed in and out without holding it in memory', async () => {
        const key = `${scope()}/large`
        const total = 64 * MiB
        const chunkSize = 256 * 1024
        const baseline = liveRss()
        let peak = baseline
        let seen = 0
        // Every 4 MiB, so a store holding the transfer would show, while garbage already dropped would not.
        const sample = (bytes: number) => {
          seen += bytes
          if (seen % (4 * MiB) < bytes) peak = Math.max(peak, liveRss())
        }
        const written = createHash('sha256')
        async function* generate(): AsyncGenerator<Uint8Array> {
          for (let sent = 0; sent < total; sent += chunkSize) {
            const chunk = randomBytes(chunkSize)
            written.update(chunk)
            sample(chunk.length)
            yield chunk
          }
        }
        assert.deepEqual(await store().put(key, generate()), { size: total })
        assert.deepEqual(await store().stat(key), { size: total })

        const read = createHash('sha256')
        let length = 0
        for await (const chunk of await store().get(key)) {
          read.update(chunk)
          length += chunk.length
          sample(chunk.length)
        }
        assert.equal(length, total)
        assert.equal(read.digest('hex'), written.digest('hex'))
        const growth = peak - baseline
        assert.ok(growth < 40 * MiB, `RSS grew by ${(growth / MiB).toFixed(1)} MiB during the transfer`)
      })
    })

    describe('byte ranges', () => {
      // Longer than a typical read chunk (64 KiB), so ranges cross chunk boundaries.
      const content = randomBytes(200_000)
      let key = ''
      before(async () => {
        key = `${scope()}/ranged`
        await store().put(key, content)
      })

      const cases: [string, ByteRange][] = [
        ['first byte', { start: 0, end: 0 }],
        ['last byte', { start: 199_999, end: 199_999 }],
        ['single byte inside', { start: 65_536, end: 65_536 }],
        ['middle, across chunks', { start: 1000, end: 150_000 }],
        ['head', { start: 0, end: 65_535 }],
        ['tail', { start: 100_000, end: 199_999 }],
        ['whole', { start: 0, end: 199_999 }],
      ]
      for (const [label, range] of cases) {
        test(label, async () => {
          const got = await readAll(await store().get(key, range))
          assert.deepEqual(got, content.subarray(range.start, range.end + 1))
        })
      }

      const invalid: [string, ByteRange][] = [
        ['start after end', { start: 10, end: 9 }],
        ['end at the size', { start: 0, end: 200_000 }],
        ['start at the size', { start: 200_000, end: 200_000 }],
        ['negative start', { start: -1, end: 10 }],
        ['fractional', { start: 0.5, end: 10 }],
        ['not a number', { start: Number.NaN, end: 10 }],
      ]
      for (const [label, range] of invalid) {
        test(`refuses ${label} with a RangeError`, async () => {
          await assert.rejects(() => store().get(key, range), RangeError)
        })
      }

      test('an empty blob has no valid range', async () => {
        const empty = `${scope()}/empty`
        await store().put(empty, Buffer.alloc(0))
        await assert.rejects(() => store().get(empty, { start: 0, end: 0 }), RangeError)
      })

      test('a range of an absent blob is BlobNotFoundError', async () => {
        await assert.rejects(() => store().get(`${scope()}/absent`, { start: 0, end: 0 }), BlobNotFoundError)
      })
    })

    describe('absent blobs, stat and delete', () => {
      test('get of an absent blob is BlobNotFoundError naming the key; stat is undefined', async () => {
        const key = `${scope()}/absent`
        await assert.rejects(
          () => store().get(key),
          (error: unknown) => {
            assert.ok(error instanceof BlobNotFoundError)
            assert.equal(error.key, key)
            assert.equal(error.name, 'BlobNotFoundError')
            return true
          },
        )
        assert.equal(await store().stat(key), undefined)
      })

      test('absent under a missing prefix and under an existing blob', async () => {
        const prefix = scope()
        await store().put(`${prefix}/a`, Buffer.from('a'))
        for (const key of [`${prefix}/missing/deeper/x`, `${prefix}/a/x`]) {
          await assert.rejects(() => store().get(key), BlobNotFoundError, key)
          assert.equal(await store().stat(key), undefined, key)
          await store().delete(key)
        }
        assert.deepEqual(await store().stat(`${prefix}/a`), { size: 1 })
      })

      test('delete removes the blob and is idempotent', async () => {
        const key = `${scope()}/doomed`
        await store().put(key, Buffer.from('bye'))
        assert.deepEqual(await store().stat(key), { size: 3 })
        await store().delete(key)
        assert.equal(await store().stat(key), undefined)
        await assert.rejects(() => store().get(key), BlobNotFoundError)
        await store().delete(key)
        await store().delete(`${scope()}/never/existed`)
      })

      test('a deleted key can be written again', async () => {
        const key = `${scope()}/again`
        await store().put(key, Buffer.from('first'))
        await store().delete(key)
        await store().put(key, Buffer.from('second'))
        assert.equal((await readAll(await store().get(key))).toString(), 'second')
      })
    })

    describe('listing', () => {
      test('list gives the blobs under a prefix with their sizes, and none that was deleted', async () => {
        const prefix = scope()
        await store().put(`${prefix}/a`, Buffer.from('one'))
        await store().put(`${prefix}/b/c`, Buffer.from('three'))
        await store().put(`${prefix}/b/d`, Buffer.alloc(0))
        await store().put(`${prefix}/gone`, Buffer.from('x'))
        await store().delete(`${prefix}/gone`)
        const before = Date.now()
        const listed = []
        for await (const blob of store().list(`${prefix}/`)) {
          assert.ok(blob.modifiedAt <= before + 1000 && blob.modifiedAt > before - 60_000, blob.key)
          listed.push([blob.key, blob.size])
        }
        listed.sort()
        assert.deepEqual(listed, [
          [`${prefix}/a`, 3],
          [`${prefix}/b/c`, 5],
          [`${prefix}/b/d`, 0],
        ])
        const nested = []
        for await (const blob of store().list(`${prefix}/b/`)) nested.push(blob.key)
        assert.deepEqual(nested.sort(), [`${prefix}/b/c`, `${prefix}/b/d`])
        for await (const blob of store().list(`${scope()}/`))
          assert.fail(`nothing is under a new prefix: ${blob.key}`)
      })

      test('the inventory holds every blob with its key, as list does, and no unfinished write', async () => {
        const prefix = scope()
        await store().put(`${prefix}/a`, Buffer.from('one'))
        await store().put(`${prefix}/b/c`, Buffer.from('three'))
        const upload = await store().createMultipart(`${prefix}/unfinished`)
        await store().writePart(upload, 1, randomBytes(1000), 1000)
        const listed = new Map<string, number>()
        for await (const blob of store().list('')) listed.set(blob.key, blob.size)
        const inventory = new Map<string, number>()
        for await (const object of store().inventory()) {
          if (object.key === undefined) continue
          assert.equal(object.name, object.key)
          inventory.set(object.key, object.size)
        }
        assert.equal(inventory.get(`${prefix}/a`), 3)
        assert.equal(inventory.get(`${prefix}/b/c`), 5)
        assert.equal(inventory.has(`${prefix}/unfinished`), false)
        // Blobs written by other tests meanwhile may be in one and not the other; those of this one in both.
        for (const key of [`${prefix}/a`, `${prefix}/b/c`]) assert.equal(listed.get(key), inventory.get(key))
        await store().abortMultipart(upload)
      })

      test('a multipart upload nobody finished is a leftover until removed', async () => {
        const upload = await store().createMultipart(`${scope()}/unfinished`)
        await store().writePart(upload, 1, randomBytes(1000), 1000)
        const ids = async () => {
          const found: string[] = []
          for await (const leftover of store().leftovers()) found.push(leftover.id)
          return found
        }
        const before = await ids()
        assert.ok(before.length > 0)
        for (const id of before) await store().removeLeftover(id)
        assert.deepEqual(await ids(), [])
        await assert.rejects(store().listParts(upload))
      })
    })

    describe('overwrite and concurrency', () => {
      test('an overwrite replaces the whole blob, shorter or longer', async () => {
        const key = `${scope()}/doc`
        const long = randomBytes(50_000)
        const short = randomBytes(10)
        await store().put(key, long)
        assert.deepEqual(await store().put(key, short), { size: 10 })
        assert.deepEqual(await readAll(await store().get(key)), short)
        assert.deepEqual(await store().stat(key), { size: 10 })
        await store().put(key, long)
        assert.deepEqual(await readAll(await store().get(key)), long)
      })

      test('concurrent puts of different content to one key leave exactly one of them', async () => {
        const key = `${scope()}/contended`
        const versions = Array.from({ length: 6 }, (_, i) => randomBytes(300_000 + i * 1000))
        const results = await Promise.all(versions.map((v) => store().put(key, chunksOf(v, 16_384))))
        assert.deepEqual(
          results,
          versions.map((v) => ({ size: v.length })),
        )
        const stored = await readAll(await store().get(key))
        const winner = versions.findIndex((v) => v.equals(stored))
        assert.ok(winner >= 0, `stored ${stored.length} bytes that match no version`)
        assert.deepEqual(await store().stat(key), { size: versions[winner]?.length })
      })

      test('a stream being read during an overwrite reads one whole version', async () => {
        const key = `${scope()}/read-while-written`
        const before = randomBytes(500_000)
        const after = randomBytes(400_000)
        await store().put(key, before)
        const reading = (await store().get(key))[Symbol.asyncIterator]()
        const first = await reading.next()
        assert.equal(first.done, false)
        await store().put(key, after)
        const chunks: Buffer[] = [first.value]
        for (let next = await reading.next(); !next.done; next = await reading.next()) chunks.push(next.value)
        const got = Buffer.concat(chunks)
        assert.ok(got.equals(before) || got.equals(after), `read ${got.length} bytes of neither version`)
        assert.deepEqual(await readAll(await store().get(key)), after)
      })
    })

    describe('failed writes', () => {
      test('a source that errors midway rejects with its error and stores nothing', async () => {
        const key = `${scope()}/broken`
        const boom = new Error('client went away')
        await assert.rejects(
          () => store().put(key, failingAfter(randomBytes(100_000), boom)),
          (error) => error === boom,
        )
        assert.equal(await store().stat(key), undefined)
        await assert.rejects(() => store().get(key), BlobNotFoundError)
      })

      test('a failed overwrite keeps the previous version', async () => {
        const key = `${scope()}/kept`
        const previous = randomBytes(30_000)
        await store().put(key, previous)
        const boom = new Error('truncated upload')
        await assert.rejects(
          () => store().put(key, failingAfter(randomBytes(100_000), boom)),
          (error) => error === boom,
        )
        assert.deepEqual(await readAll(await store().get(key)), previous)
      })

      test('a Readable destroyed with an error midway rejects with that error', async () => {
        const key = `${scope()}/destroyed-error`
        const boom = new Error('socket reset')
        const source = new Readable({ read() {} })
        source.push(randomBytes(10_000))
        setTimeout(() => source.destroy(boom), 10)
        await assert.rejects(
          () => store().put(key, source),
          (error) => error === boom,
        )
        assert.equal(await store().stat(key), undefined)
      })

      test('a Readable that fails before it is read rejects with its error, and nothing goes uncaught', async () => {
        const key = `${scope()}/failed-early`
        const boom = new Error('client went away')
        const source = new Readable({ read() {} })
        const put = store().put(key, source)
        // Before the store has opened anything to write into: the error has no reader yet.
        source.destroy(boom)
        await assert.rejects(put, (error) => error === boom)
        assert.equal(await store().stat(key), undefined)
        const upload = await store().createMultipart(`${scope()}/failed-early-part`)
        const part = new Readable({ read() {} })
        const written = store().writePart(upload, 1, part, 10)
        part.destroy(boom)
        await assert.rejects(written, (error) => error === boom)
        await store().abortMultipart(upload)
      })

      test('a Readable destroyed without an error midway is not taken for a complete blob', async () => {
        const key = `${scope()}/destroyed-quietly`
        const previous = Buffer.from('previous')
        await store().put(key, previous)
        const source = new Readable({ read() {} })
        source.push(randomBytes(10_000))
        setTimeout(() => source.destroy(), 10)
        await assert.rejects(() => store().put(key, source))
        assert.deepEqual(await readAll(await store().get(key)), previous)
      })
    })

    multipartUploadsSuite(store, rules)

    describe('keys', () => {
      for (const [label, key] of INVALID_KEYS) {
        test(`refuses a key with ${label} in every method`, async () => {
          const refused = (error: unknown) => error instanceof InvalidBlobKeyError
          await assert.rejects(() => store().put(key, Buffer.from('x')), refused, 'put')
          await assert.rejects(() => store().get(key), refused, 'get')
          await assert.rejects(() => store().get(key, { start: 0, end: 0 }), refused, 'get with a range')
          await assert.rejects(() => store().stat(key), refused, 'stat')
          await assert.rejects(() => store().delete(key), refused, 'delete')
          await assert.rejects(() => store().createMultipart(key), refused, 'createMultipart')
        })
      }

      test('a refused key consumes nothing of the source', async () => {
        let pulled = false
        const source = (async function* () {
          pulled = true
          yield Buffer.from('x')
        })()
        await assert.rejects(() => store().put('../escape', source), InvalidBlobKeyError)
        assert.equal(pulled, false)
      })

      test('accepts keys at the length bounds', async () => {
        const prefix = scope()
        const longSegment = `${prefix}/${'s'.repeat(200)}`
        let longKey = prefix
        while (longKey.length < MAX_KEY_LENGTH)
          longKey += `/${'x'.repeat(Math.min(200, MAX_KEY_LENGTH - longKey.length - 1))}`
        assert.equal(longKey.length, MAX_KEY_LENGTH)
        for (const key of [longSegment, longKey, `${prefix}/a`, `${prefix}/0-_9`]) {
          await store().put(key, Buffer.from(key))
          assert.equal((await readAll(await store().get(key))).toString(), key)
        }
      })

      test('many keys in nested prefixes, including keys beneath other blobs', async () => {
        const prefix = scope()
        const keys = [
          `${prefix}/a`,
          `${prefix}/a/b`,
          `${prefix}/a/b/c`,
          `${prefix}/a/b/d`,
          `${prefix}/a/e`,
          `${prefix}/f/g/h/i/j/k`,
          ...Array.from({ length: 40 }, (_, i) => `${prefix}/many/${i % 4}/item-${i}`),
        ]
        const contentOf = (key: string) => Buffer.from(`content of ${key}`)
        await Promise.all(keys.map((key) => store().put(key, contentOf(key))))
        for (const key of keys) {
          assert.deepEqual(await readAll(await store().get(key)), contentOf(key), key)
        }
        await store().delete(`${prefix}/a/b`)
        assert.equal(await store().stat(`${prefix}/a/b`), undefined)
        for (const key of [`${prefix}/a`, `${prefix}/a/b/c`, `${prefix}/a/b/d`]) {
          assert.deepEqual(await readAll(await store().get(key)), contentOf(key), key)
        }
        await store().delete(`${prefix}/a/b/c`)
        assert.deepEqual(await store().stat(`${prefix}/a`), { size: contentOf(`${prefix}/a`).length })
      })
    })
  })
}
