// The contract of src/blob/blob-store.ts as tests. Every BlobStore driver runs this suite unchanged from its
// own test file: `blobStoreSuite('S3BlobStore', async () => ({ store, cleanup }))`. Each test works under
// keys of its own, so tests share one store and do not depend on each other or on their order.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import {
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  InvalidBlobKeyError,
  InvalidPartError,
  MAX_PART_NUMBER,
  type MultipartUpload,
  MultipartUploadNotFoundError,
  PartLengthError,
  type PartRef,
} from '../src/blob/blob-store.ts'

export interface StoreUnderTest {
  store: BlobStore
  /** Removes everything the store created; may also assert driver invariants (e.g. no temporary files). */
  cleanup(): Promise<void>
}

const MiB = 1024 * 1024
/** The part size of the @vercel/blob client, which a driver may be built around. */
const PART = 8 * MiB

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

// `node --test` gives no way to pass --expose-gc to one file; V8 accepts the flag at run time, and a new
// context then carries `gc`. Without it, RSS would count garbage the collector has not got round to.
setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

/** Resident memory after a full collection: what the process really holds. */
function liveRss(): number {
  collectGarbage()
  return process.memoryUsage.rss()
}

/** A key prefix no other test uses. */
function scope(): string {
  return `t-${randomBytes(6).toString('hex')}`
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks)
}

async function* chunksOf(content: Buffer, chunkSize: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < content.length; offset += chunkSize) {
    // Yield to the event loop so concurrent writers really interleave.
    await tick()
    yield content.subarray(offset, offset + chunkSize)
  }
}

/** Yields `head`, then fails the way a dropped client connection does. */
async function* failingAfter(head: Buffer, error: Error): AsyncGenerator<Uint8Array> {
  yield head
  await tick()
  throw error
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
  ['key over 1024 characters', Array.from({ length: 6 }, () => 'c'.repeat(180)).join('/')],
  ['very long', 'd'.repeat(100_000)],
]

export function blobStoreSuite(name: string, makeStore: () => Promise<StoreUnderTest>): void {
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

    describe('multipart uploads', () => {
      /** Writes each part (one at a time, in the order given) with its length announced, unless told not to. */
      async function writeParts(
        upload: MultipartUpload,
        parts: [number, Buffer][],
        options: { announce?: boolean } = {},
      ): Promise<PartRef[]> {
        const written: PartRef[] = []
        for (const [partNumber, bytes] of parts) {
          const length = options.announce === false ? undefined : bytes.length
          const part = await store().writePart(upload, partNumber, chunksOf(bytes, 64 * 1024), length)
          assert.equal(part.partNumber, partNumber)
          assert.equal(part.size, bytes.length)
          written.push({ partNumber: part.partNumber, etag: part.etag })
        }
        return written.sort((a, b) => a.partNumber - b.partNumber)
      }

      /** Completes and checks that the blob, its size and its SHA-256 are exactly `expected`. */
      async function completeAs(upload: MultipartUpload, parts: PartRef[], expected: Buffer): Promise<void> {
        assert.deepEqual(await store().completeMultipart(upload, parts), {
          size: expected.length,
          sha256: sha256(expected),
        })
        assert.deepEqual(await store().stat(upload.key), { size: expected.length })
        assert.ok((await readAll(await store().get(upload.key))).equals(expected), 'stored bytes differ')
      }

      const full = (count: number) => Array.from({ length: count }, () => randomBytes(PART))

      test('parts of the client part size, in order, make the blob', async () => {
        const parts = [...full(3), randomBytes(12_345)]
        const upload = await store().createMultipart(`${scope()}/in-order`)
        const written = await writeParts(
          upload,
          parts.map((p, i) => [i + 1, p]),
        )
        await completeAs(upload, written, Buffer.concat(parts))
      })

      test('parts written out of order, from every kind of source', async () => {
        const parts = [...full(3), randomBytes(1000)]
        const upload = await store().createMultipart(`${scope()}/out-of-order`)
        const written = [
          await store().writePart(upload, 4, parts[3] as Buffer, 1000),
          await store().writePart(upload, 2, Readable.from([parts[1] as Buffer]), PART),
          await store().writePart(upload, 3, chunksOf(parts[2] as Buffer, 100_000), PART),
          await store().writePart(upload, 1, parts[0] as Buffer, PART),
        ]
        const refs = written
          .map(({ partNumber, etag }) => ({ partNumber, etag }))
          .sort((a, b) => a.partNumber - b.partNumber)
        await completeAs(upload, refs, Buffer.concat(parts))
      })

      test('parts written concurrently, their chunks interleaved', async () => {
        const parts = [...full(5), randomBytes(PART - 1)]
        const upload = await store().createMultipart(`${scope()}/concurrent`)
        // Reverse order of start, so that the last parts tend to land first.
        const written = await Promise.all(
          parts
            .map((bytes, i) => [i + 1, bytes] as const)
            .reverse()
            .map(([n, bytes]) => store().writePart(upload, n, chunksOf(bytes, 256 * 1024), bytes.length)),
        )
        const refs = written.map(({ partNumber, etag }) => ({ partNumber, etag })).reverse()
        await completeAs(upload, refs, Buffer.concat(parts))
      })

      test('parts of any size, with or without a length, and gaps in the numbers', async () => {
        const cases: [string, [number, Buffer][], { announce?: boolean }][] = [
          [
            'small parts',
            [
              [1, randomBytes(MiB + 17)],
              [2, randomBytes(333)],
              [3, randomBytes(5 * MiB)],
            ],
            {},
          ],
          [
            'a part longer than the client part size',
            [
              [1, randomBytes(PART + 1)],
              [2, randomBytes(PART)],
            ],
            {},
          ],
          [
            'lengths not announced',
            [
              [1, randomBytes(PART)],
              [2, randomBytes(PART)],
              [3, randomBytes(10)],
            ],
            { announce: false },
          ],
          [
            'gaps',
            [
              [1, randomBytes(PART)],
              [3, randomBytes(PART)],
              [7, randomBytes(4321)],
            ],
            {},
          ],
          [
            'a first part that is not number 1',
            [
              [2, randomBytes(PART)],
              [3, randomBytes(5)],
            ],
            {},
          ],
          [
            'empty parts',
            [
              [1, Buffer.alloc(0)],
              [2, randomBytes(PART)],
              [3, Buffer.alloc(0)],
            ],
            {},
          ],
        ]
        for (const [label, parts, options] of cases) {
          const upload = await store().createMultipart(`${scope()}/sizes`)
          const written = await writeParts(upload, parts, options)
          await completeAs(upload, written, Buffer.concat(parts.map(([, bytes]) => bytes))).catch((error) => {
            throw new Error(`${label}: ${error.message}`, { cause: error })
          })
        }
      })

      test('listParts lists the whole writes, and nothing of failed or unfinished ones', async () => {
        const upload = await store().createMultipart(`${scope()}/listed-parts`)
        assert.deepEqual(await store().listParts(upload), [])
        const one = await store().writePart(upload, 1, randomBytes(PART), PART)
        const two = await store().writePart(upload, 2, chunksOf(randomBytes(PART + 1), 100_000))
        const threeFirst = await store().writePart(upload, 3, randomBytes(10), 10)
        const threeAgain = await store().writePart(upload, 3, randomBytes(20), 20)
        await assert.rejects(() =>
          store().writePart(upload, 4, failingAfter(randomBytes(MiB), new Error('reset')), PART),
        )
        let resume: () => void = () => {}
        const stalled = new Promise<void>((resolve) => {
          resume = resolve
        })
        const unfinished = store().writePart(
          upload,
          5,
          (async function* () {
            yield randomBytes(1000)
            await stalled
            yield randomBytes(1000)
          })(),
          2000,
        )
        await new Promise((resolve) => setTimeout(resolve, 50))
        const listed = await store().listParts(upload)
        const key = (p: { partNumber: number; etag: string; size: number }) =>
          `${p.partNumber}:${p.etag}:${p.size}`
        const written = new Set([one, two, threeFirst, threeAgain].map(key))
        for (const part of listed) assert.ok(written.has(key(part)), `listed ${key(part)}, never written`)
        for (const part of [one, two, threeAgain]) {
          assert.ok(
            listed.some((p) => key(p) === key(part)),
            `${key(part)} is not listed`,
          )
        }
        assert.deepEqual([...new Set(listed.map((p) => p.partNumber))].sort(), [1, 2, 3])
        resume()
        const five = await unfinished
        assert.ok((await store().listParts(upload)).some((p) => key(p) === key(five)))
        await store().abortMultipart(upload)
        await assert.rejects(() => store().listParts(upload), MultipartUploadNotFoundError)
      })

      test('no parts make an empty blob', async () => {
        const upload = await store().createMultipart(`${scope()}/empty`)
        await completeAs(upload, [], Buffer.alloc(0))
      })

      test('a completed upload replaces the blob under its key', async () => {
        const key = `${scope()}/replaced`
        await store().put(key, randomBytes(50_000))
        const upload = await store().createMultipart(key)
        const part = randomBytes(1000)
        await completeAs(upload, await writeParts(upload, [[1, part]]), part)
      })

      describe('a part number written again', () => {
        const first = randomBytes(PART)
        const second = randomBytes(PART)
        const tail = randomBytes(777)

        test('each write keeps its bytes: the list decides, never a mix', async () => {
          for (const listFirst of [false, true]) {
            const upload = await store().createMultipart(`${scope()}/again`)
            const [a] = await writeParts(upload, [[1, first]])
            const [b] = await writeParts(upload, [[1, second]])
            const [t] = await writeParts(upload, [[2, tail]])
            assert.ok(a && b && t)
            assert.notEqual(a.etag, b.etag)
            if (!listFirst) {
              await completeAs(upload, [b, t], Buffer.concat([second, tail]))
              continue
            }
            // S3 keeps only the last write of a number; a driver that keeps both must give the first its own bytes.
            try {
              await completeAs(upload, [a, t], Buffer.concat([first, tail]))
            } catch (error) {
              assert.ok(error instanceof InvalidPartError, String(error))
              await completeAs(upload, [b, t], Buffer.concat([second, tail]))
            }
          }
        })

        test('concurrent writes of one number do not corrupt each other', async () => {
          const upload = await store().createMultipart(`${scope()}/racing`)
          const [a, b] = await Promise.all([
            store().writePart(upload, 1, chunksOf(first, 50_000), PART),
            store().writePart(upload, 1, chunksOf(second, 50_000), PART),
          ])
          assert.ok(a && b)
          const [t] = await writeParts(upload, [[2, tail]])
          assert.ok(t)
          // Whichever the driver kept last, the blob holds exactly one write's bytes.
          try {
            await completeAs(upload, [{ partNumber: 1, etag: b.etag }, t], Buffer.concat([second, tail]))
          } catch (error) {
            assert.ok(error instanceof InvalidPartError, String(error))
            await completeAs(upload, [{ partNumber: 1, etag: a.etag }, t], Buffer.concat([first, tail]))
          }
        })

        test('a failed write leaves earlier writes of the number intact, and a retry after it works', async () => {
          const boom = new Error('connection reset')
          const upload = await store().createMultipart(`${scope()}/retried`)
          // Fails before anything lands: a retry then takes its place.
          await assert.rejects(
            () => store().writePart(upload, 1, failingAfter(first.subarray(0, MiB), boom), PART),
            (error) => error === boom,
          )
          const [one] = await writeParts(upload, [[1, first]])
          // Fails after part 1 landed: part 1 stays as it was.
          await assert.rejects(
            () => store().writePart(upload, 1, failingAfter(second.subarray(0, 3 * MiB), boom), PART),
            (error) => error === boom,
          )
          await assert.rejects(
            () => store().writePart(upload, 2, failingAfter(second.subarray(0, MiB), boom)),
            (error) => error === boom,
          )
          const [two] = await writeParts(upload, [[2, tail]])
          assert.ok(one && two)
          await completeAs(upload, [one, two], Buffer.concat([first, tail]))
        })
      })

      test('a part of another length than announced fails and leaves the upload as it was', async () => {
        const upload = await store().createMultipart(`${scope()}/length`)
        const first = randomBytes(PART)
        const [one] = await writeParts(upload, [[1, first]])
        for (const [announced, sent] of [
          [PART, PART - 1],
          [PART, PART + 1],
          [10, 9],
          [10, 11],
          [PART + 10, PART + 11],
        ] as const) {
          await assert.rejects(
            () => store().writePart(upload, 2, chunksOf(randomBytes(sent), 100_000), announced),
            PartLengthError,
            `${sent} bytes announced as ${announced}`,
          )
        }
        const part = randomBytes(10)
        const [two] = await writeParts(upload, [[2, part]])
        assert.ok(one && two)
        await completeAs(upload, [one, two], Buffer.concat([first, part]))
      })

      test('part numbers outside 1 to 10000 are refused', async () => {
        const upload = await store().createMultipart(`${scope()}/numbers`)
        for (const n of [0, -1, 1.5, MAX_PART_NUMBER + 1, Number.NaN]) {
          await assert.rejects(() => store().writePart(upload, n, Buffer.from('x'), 1), RangeError, String(n))
        }
        await store().writePart(upload, MAX_PART_NUMBER, Buffer.from('last'), 4)
        await store().abortMultipart(upload)
      })

      test('a list naming a part that was not written is refused, and a corrected list still completes', async () => {
        const key = `${scope()}/listed`
        const parts = [randomBytes(PART), randomBytes(100)]
        const upload = await store().createMultipart(key)
        const [one, two] = await writeParts(upload, [
          [1, parts[0] as Buffer],
          [2, parts[1] as Buffer],
        ])
        assert.ok(one && two)
        const other = await store().createMultipart(`${scope()}/other`)
        const [foreign] = await writeParts(other, [[3, randomBytes(10)]])
        assert.ok(foreign)
        const wrongLists: [string, PartRef[]][] = [
          ['a part number never written', [one, two, { partNumber: 3, etag: two.etag }]],
          ['an etag of another number', [one, { partNumber: 2, etag: one.etag }]],
          ['an etag of another upload', [one, two, foreign]],
          ['an etag never given out', [one, { partNumber: 2, etag: 'nope' }]],
          ['descending numbers', [two, one]],
          ['a number listed twice', [one, one, two]],
        ]
        for (const [label, list] of wrongLists) {
          await assert.rejects(() => store().completeMultipart(upload, list), InvalidPartError, label)
        }
        assert.equal(await store().stat(key), undefined)
        await completeAs(upload, [one, two], Buffer.concat(parts))
        await store().abortMultipart(other)
      })

      test('once completed or aborted, an upload takes no part and completes no more', async () => {
        const completed = await store().createMultipart(`${scope()}/done`)
        const parts = await writeParts(completed, [[1, randomBytes(10)]])
        await store().completeMultipart(completed, parts)
        const aborted = await store().createMultipart(`${scope()}/aborted`)
        const abortedParts = await writeParts(aborted, [
          [1, randomBytes(PART)],
          [2, randomBytes(PART + 1)],
        ])
        await store().abortMultipart(aborted)
        await store().abortMultipart(aborted)
        assert.equal(await store().stat(aborted.key), undefined)
        const never = { key: `${scope()}/never`, uploadId: 'not-an-upload' }
        for (const [upload, list] of [
          [completed, parts],
          [aborted, abortedParts],
          [never, []],
        ] as [MultipartUpload, PartRef[]][]) {
          await assert.rejects(
            () => store().writePart(upload, 1, Buffer.from('x'), 1),
            MultipartUploadNotFoundError,
          )
          await assert.rejects(() => store().completeMultipart(upload, list), MultipartUploadNotFoundError)
          await assert.rejects(() => store().listParts(upload), MultipartUploadNotFoundError)
        }
        await store().abortMultipart(never)
      })

      test('two completions of one upload: one makes the blob, the other is refused', async () => {
        const content = randomBytes(PART + 5)
        const upload = await store().createMultipart(`${scope()}/twice`)
        const parts = await writeParts(upload, [
          [1, content.subarray(0, PART)],
          [2, content.subarray(PART)],
        ])
        const results = await Promise.allSettled([
          store().completeMultipart(upload, parts),
          store().completeMultipart(upload, parts),
        ])
        const done = results.filter((r) => r.status === 'fulfilled')
        const refused = results.filter((r) => r.status === 'rejected')
        assert.equal(done.length, 1)
        assert.ok(refused[0]?.reason instanceof MultipartUploadNotFoundError, String(refused[0]?.reason))
        assert.ok((await readAll(await store().get(upload.key))).equals(content))
      })

      test('a write still in flight when the upload completes does not change the blob', async () => {
        const head = randomBytes(PART)
        const upload = await store().createMultipart(`${scope()}/late`)
        const [one] = await writeParts(upload, [[1, head]])
        assert.ok(one)
        // Part 2 starts, then stalls until the upload is complete.
        let resume: () => void = () => {}
        const stalled = new Promise<void>((resolve) => {
          resume = resolve
        })
        const late = store().writePart(
          upload,
          2,
          (async function* () {
            yield randomBytes(MiB)
            await stalled
            yield randomBytes(PART - MiB)
          })(),
          PART,
        )
        // Let the first chunk land.
        await new Promise((resolve) => setTimeout(resolve, 50))
        await completeAs(upload, [one], head)
        resume()
        await late.then(
          () => {},
          (error) => assert.ok(error instanceof MultipartUploadNotFoundError, String(error)),
        )
        assert.ok((await readAll(await store().get(upload.key))).equals(head))
        assert.deepEqual(await store().stat(upload.key), { size: PART })
      })
    })

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
        while (longKey.length < 1024) longKey += `/${'x'.repeat(Math.min(200, 1024 - longKey.length - 1))}`
        assert.equal(longKey.length, 1024)
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
