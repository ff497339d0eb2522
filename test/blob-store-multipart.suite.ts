// The multipart part of the BlobStore contract (src/platform/blob/blob-store.ts), which blobStoreSuite in
// blob-store.suite.ts runs for every driver: parts of any size, order and source, written again or
// concurrently, refused when they break a rule, and uploads completed or aborted exactly once.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { describe, test } from 'node:test'
import { crc32 } from 'node:zlib'
import {
  type BlobStore,
  InvalidPartError,
  MAX_PART_NUMBER,
  type MultipartUpload,
  MultipartUploadNotFoundError,
  PartLengthError,
  type PartRef,
} from '../src/platform/blob/blob-store.ts'
import type { StoreRules } from './blob-store.suite.ts'
import { chunksOf, failingAfter, MiB, readAll, scope } from './support/blob-store-helpers.ts'

/** The part size of the @vercel/blob client, which a driver may be built around. */
const PART = 8 * MiB

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** The multipart uploads of the store that `store()` returns, as blobStoreSuite's part of that name. */
export function multipartUploadsSuite(store: () => BlobStore, rules: StoreRules): void {
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

    /** What completing gives for a blob of `bytes`: its size, and its SHA-256 and CRC-32 where the store computes them. */
    const joined = (bytes: Buffer) => ({
      size: bytes.length,
      sha256: rules.hashesMultipart ? sha256(bytes) : undefined,
      crc32: rules.hashesMultipart ? crc32(bytes) : undefined,
    })

    /** Completes and checks that the blob, its size and its SHA-256 are exactly `expected`. */
    async function completeAs(upload: MultipartUpload, parts: PartRef[], expected: Buffer): Promise<void> {
      assert.deepEqual(await store().completeMultipart(upload, parts), joined(expected))
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
      const allCases: [string, [number, Buffer][], { announce?: boolean }][] = [
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
      // Where the store has a least part size, only the cases that keep to it.
      const cases = allCases.filter(([, parts]) =>
        parts.slice(0, -1).every(([, bytes]) => bytes.length >= rules.minPartBytes),
      )
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

    test('a part under the least size but the last is refused, and changes nothing; as the last it may be', {
      skip: rules.minPartBytes === 0 ? 'this store takes parts of any size' : false,
    }, async () => {
      const small = randomBytes(rules.minPartBytes - 1)
      const whole = randomBytes(rules.minPartBytes)
      const tail = randomBytes(10)
      const upload = await store().createMultipart(`${scope()}/least-size`)
      const written = await writeParts(upload, [
        [1, small],
        [2, whole],
        [3, tail],
      ])
      await assert.rejects(
        () => store().completeMultipart(upload, written),
        (error: Error) => error instanceof InvalidPartError && error.partNumber === 1,
      )
      assert.equal((await store().listParts(upload)).length, 3)
      await store().abortMultipart(upload)
      const again = await store().createMultipart(`${scope()}/least-size-last`)
      const parts = await writeParts(again, [
        [1, whole],
        [2, small],
      ])
      await completeAs(again, parts, Buffer.concat([whole, small]))
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

    test('two completions of one upload at once make the blob once; a completion refused is not found', async () => {
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
      // A store may refuse the second (MultipartUploadNotFoundError), or answer it with the same blob: S3's
      // CompleteMultipartUpload is idempotent.
      const done = results.filter((r) => r.status === 'fulfilled')
      assert.ok(done.length >= 1)
      for (const result of done) assert.deepEqual(result.value, joined(content))
      for (const result of results) {
        if (result.status === 'rejected') {
          assert.ok(result.reason instanceof MultipartUploadNotFoundError, String(result.reason))
        }
      }
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
}
