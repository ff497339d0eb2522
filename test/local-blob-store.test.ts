// LocalBlobStore: the shared BlobStore suite, then what only a filesystem driver promises: where the files
// are (multipart uploads included), no temporary file left behind, leftovers of a crash swept, symbolic links
// never followed, parts durable before they are acknowledged.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readlinkSync } from 'node:fs'
import {
  type FileHandle,
  lutimes,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { after, before, describe, type TestContext, test } from 'node:test'
import { crc32 } from 'node:zlib'
import { BlobNotFoundError, type PartRef } from '../src/platform/blob/blob-store.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { SLOT_BYTES } from '../src/platform/blob/local-multipart.ts'
import { blobStoreSuite } from './blob-store.suite.ts'

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), 'coffer-blobs-'))
}

/**
 * Replaces method `name` of every FileHandle of this process (they share one prototype, reached through a
 * handle opened on `dir`) with `replace(original)`, until the test ends.
 */
async function onEveryFileHandle<K extends 'read' | 'sync'>(
  t: TestContext,
  dir: string,
  name: K,
  replace: (original: FileHandle[K]) => FileHandle[K],
): Promise<void> {
  const probe = await open(dir, 'r')
  const proto = Object.getPrototypeOf(probe) as FileHandle
  await probe.close()
  const original = proto[name]
  t.after(() => {
    proto[name] = original
  })
  proto[name] = replace(original)
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks)
}

/** Every file below `dir`, as sorted relative paths (links listed, not followed). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => !entry.isDirectory())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort()
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function* failingAfter(head: Buffer, error: Error): AsyncGenerator<Uint8Array> {
  yield head
  throw error
}

blobStoreSuite('LocalBlobStore', async () => {
  const root = await tempDir()
  return {
    store: await LocalBlobStore.open(root),
    async cleanup() {
      // The suite's failed and concurrent writes must not have left a temporary file behind.
      assert.deepEqual(await readdir(path.join(root, '.tmp')), [])
      await rm(root, { recursive: true, force: true })
    },
  }
})

describe('LocalBlobStore on disk', () => {
  const dirs: string[] = []
  const fresh = async () => {
    const dir = await tempDir()
    dirs.push(dir)
    return dir
  }
  after(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  test('blobs are plain files under the root, named by their key', async () => {
    const root = await fresh()
    const store = await LocalBlobStore.open(root)
    await store.put('files/acc_1/fil_1', Buffer.from('one'))
    await store.put('files/acc_1/fil_1/preview', Buffer.from('beneath'))
    await store.put('empty', Buffer.alloc(0))
    assert.deepEqual(await filesUnder(root), [
      'empty.blob',
      'files/acc_1/fil_1.blob',
      'files/acc_1/fil_1/preview.blob',
    ])
    assert.equal(await readFile(path.join(root, 'files/acc_1/fil_1.blob'), 'utf8'), 'one')
    assert.equal(await readFile(path.join(root, 'files/acc_1/fil_1/preview.blob'), 'utf8'), 'beneath')
    assert.equal((await stat(path.join(root, 'empty.blob'))).size, 0)
  })

  test('open creates a missing root, and the root may itself be a symbolic link', async () => {
    const base = await fresh()
    const real = path.join(base, 'deep/real')
    const viaLink = path.join(base, 'link')
    const created = await LocalBlobStore.open(real)
    await created.put('a/b', Buffer.from('x'))
    await symlink(real, viaLink)
    const linked = await LocalBlobStore.open(viaLink)
    assert.equal((await readAll(await linked.get('a/b'))).toString(), 'x')
    await linked.put('a/c', Buffer.from('y'))
    assert.equal(await readFile(path.join(real, 'a/c.blob'), 'utf8'), 'y')
  })

  test('failed writes leave no temporary file and no directory entry for the key', async () => {
    const root = await fresh()
    const store = await LocalBlobStore.open(root)
    const boom = new Error('boom')
    await assert.rejects(() => store.put('x/failed', failingAfter(randomBytes(1000), boom)), boom)
    const quiet = new Readable({ read() {} })
    quiet.push(randomBytes(1000))
    setImmediate(() => quiet.destroy())
    await assert.rejects(() => store.put('x/quiet', quiet))
    // A source yielding something that is not bytes fails in the writer instead of the source.
    await assert.rejects(() => store.put('x/odd', Readable.from([42], { objectMode: true })))
    assert.deepEqual(await readdir(path.join(root, '.tmp')), [])
    assert.deepEqual(await filesUnder(root), [])
  })

  test('leftovers: the temporary file of a crashed write and the directory of an upload, each with its last change', async () => {
    const root = await fresh()
    const store = await LocalBlobStore.open(root)
    const temp = path.join(root, '.tmp')
    await writeFile(path.join(temp, 'crashed.part'), 'half a blob')
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
    await utimes(path.join(temp, 'crashed.part'), twoHoursAgo, twoHoursAgo)
    const upload = await store.createMultipart('a/upload')
    await store.writePart(upload, 1, randomBytes(100), 100)
    await store.put('a/blob', Buffer.from('a blob is not a leftover'))

    const found = []
    for await (const leftover of store.leftovers()) found.push(leftover)
    // The crashed write's file first, then the upload's directory.
    found.sort((x, y) => Number(y.id === 'crashed.part') - Number(x.id === 'crashed.part'))
    assert.deepEqual(
      found.map(({ id, size }) => ({ id, size })),
      [
        { id: 'crashed.part', size: 11 },
        { id: `${upload.uploadId}.mpu`, size: found[1]?.size },
      ],
    )
    assert.ok((found[1]?.size ?? 0) >= 100)
    assert.equal(Math.round(found[0]?.modifiedAt ?? 0), twoHoursAgo.getTime())
    assert.ok((found[1]?.modifiedAt ?? 0) > Date.now() - 60_000)

    await store.removeLeftover('crashed.part')
    await store.removeLeftover(`${upload.uploadId}.mpu`)
    await store.removeLeftover('crashed.part')
    assert.deepEqual(await readdir(temp), [])
    await assert.rejects(store.removeLeftover('../a'), /not a leftover/)
    assert.equal(await store.stat('a/blob').then((s) => s?.size), 24)
  })

  test('list: the blobs under a prefix, with their sizes; never temporary state', async () => {
    const root = await fresh()
    const store = await LocalBlobStore.open(root)
    await store.put('files/acc_a/fil_1', Buffer.from('one'))
    await store.put('files/acc_a/fil_2', Buffer.from('three'))
    await store.put('files/acc_b/fil_3', Buffer.from('x'))
    await store.put('previews/acc_a/fil_1', Buffer.from('webp'))
    await writeFile(path.join(root, '.tmp', 'crashed.part'), 'x')
    const keys = async (prefix: string) => {
      const listed = []
      for await (const blob of store.list(prefix)) listed.push(`${blob.key}:${blob.size}`)
      return listed.sort()
    }
    assert.deepEqual(await keys('files/'), [
      'files/acc_a/fil_1:3',
      'files/acc_a/fil_2:5',
      'files/acc_b/fil_3:1',
    ])
    assert.deepEqual(await keys('files/acc_a/'), ['files/acc_a/fil_1:3', 'files/acc_a/fil_2:5'])
    assert.deepEqual(await keys(''), [
      'files/acc_a/fil_1:3',
      'files/acc_a/fil_2:5',
      'files/acc_b/fil_3:1',
      'previews/acc_a/fil_1:4',
    ])
    assert.deepEqual(await keys('nothing/'), [])
  })

  test('inventory: the blobs, and every other file under the root by its name; never temporary state', async () => {
    const root = await fresh()
    const store = await LocalBlobStore.open(root)
    await store.put('files/acc_a/fil_1', Buffer.from('one'))
    await writeFile(path.join(root, '.tmp', 'crashed.part'), 'x')
    await writeFile(path.join(root, 'files', 'acc_a', 'notes.txt'), 'stray')
    await writeFile(path.join(root, 'Upper.blob'), 'no key is uppercase')
    await symlink(path.join(root, 'files', 'acc_a', 'fil_1.blob'), path.join(root, 'files', 'linked.blob'))
    const found = []
    for await (const { key, name } of store.inventory()) found.push(`${key ?? '-'} ${name}`)
    assert.deepEqual(found.sort(), [
      '- Upper.blob',
      '- files/acc_a/notes.txt',
      '- files/linked.blob',
      'files/acc_a/fil_1 files/acc_a/fil_1',
    ])
  })

  describe('multipart uploads on disk', () => {
    const uploadDirs = async (root: string) => (await readdir(path.join(root, '.tmp'))).sort()

    test('parts 1..K in their slots become the blob in place; anything else is copied in order', async () => {
      const root = await fresh()
      const store = await LocalBlobStore.open(root)
      const parts = [randomBytes(SLOT_BYTES), randomBytes(SLOT_BYTES), randomBytes(1000)]

      const inPlace = await store.createMultipart('a/in-place')
      const written: PartRef[] = []
      for (const [i, bytes] of parts.entries()) {
        written.push(await store.writePart(inPlace, i + 1, bytes, bytes.length))
      }
      const dir = path.join(root, '.tmp', `${inPlace.uploadId}.mpu`)
      assert.deepEqual(await uploadDirs(root), [`${inPlace.uploadId}.mpu`])
      const [one, two, three] = written.map((part) => part.etag.slice(1, 17))
      assert.deepEqual((await readdir(dir)).sort(), [
        `1-${one}-${SLOT_BYTES}.slotted`,
        '1.slot',
        `2-${two}-${SLOT_BYTES}.slotted`,
        '2.slot',
        `3-${three}-1000.slotted`,
        '3.slot',
        'data',
      ])
      const data = await stat(path.join(dir, 'data'))
      await store.completeMultipart(inPlace, written)
      // The very file the parts were written to, renamed: no byte was copied.
      assert.equal((await stat(path.join(root, 'a/in-place.blob'))).ino, data.ino)
      assert.deepEqual(await uploadDirs(root), [])

      // Part 2 unannounced goes to a file of its own; the blob is then a copy.
      const copied = await store.createMultipart('a/copied')
      const copiedParts = [
        await store.writePart(copied, 1, parts[0] as Buffer, SLOT_BYTES),
        await store.writePart(copied, 2, parts[1] as Buffer),
        await store.writePart(copied, 3, parts[2] as Buffer, 1000),
      ]
      const copiedDir = path.join(root, '.tmp', `${copied.uploadId}.mpu`)
      const files = (await readdir(copiedDir)).sort()
      assert.equal(files.length, 6)
      assert.match(files[2] as string, new RegExp(`^2-[0-9a-f]{16}-${SLOT_BYTES}\\.part$`))
      const copiedData = await stat(path.join(copiedDir, 'data'))
      const result = await store.completeMultipart(copied, copiedParts)
      assert.equal(result.sha256, sha256(Buffer.concat(parts)))
      assert.equal(result.crc32, crc32(Buffer.concat(parts)))
      assert.notEqual((await stat(path.join(root, 'a/copied.blob'))).ino, copiedData.ino)
      assert.ok((await readAll(await store.get('a/copied'))).equals(Buffer.concat(parts)))
      assert.deepEqual(await uploadDirs(root), [])
    })

    test('the SHA-256 of parts that landed in order is ready at completion, with nothing read back', async (t) => {
      const root = await fresh()
      const store = await LocalBlobStore.open(root)
      // Counts the bytes this process reads from files from now on.
      let read = 0
      await onEveryFileHandle(t, path.join(root, '.tmp'), 'read', (original) => {
        return async function (this: FileHandle, ...args: unknown[]) {
          const result = await (original as (...a: unknown[]) => Promise<{ bytesRead: number }>).apply(
            this,
            args,
          )
          read += result.bytesRead
          return result
        } as typeof original
      })

      const parts = [
        randomBytes(SLOT_BYTES),
        randomBytes(SLOT_BYTES),
        randomBytes(SLOT_BYTES),
        randomBytes(99),
      ]
      const total = 3 * SLOT_BYTES + 99
      const upload = await store.createMultipart('a/hashed')
      // Out of order: the hash waits for part 1, then catches up.
      const written = [
        await store.writePart(upload, 3, parts[2] as Buffer, SLOT_BYTES),
        await store.writePart(upload, 2, parts[1] as Buffer, SLOT_BYTES),
        await store.writePart(upload, 4, parts[3] as Buffer, 99),
        await store.writePart(upload, 1, parts[0] as Buffer, SLOT_BYTES),
      ].sort((a, b) => a.partNumber - b.partNumber)
      // The hash runs in the background, reading each part back once.
      for (const deadline = Date.now() + 10_000; read < total && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      assert.equal(read, total)
      read = 0
      assert.deepEqual(await store.completeMultipart(upload, written), {
        size: total,
        sha256: sha256(Buffer.concat(parts)),
        crc32: crc32(Buffer.concat(parts)),
      })
      assert.equal(read, 0)
    })

    test('an abort removes every file of the upload', async () => {
      const root = await fresh()
      const store = await LocalBlobStore.open(root)
      const upload = await store.createMultipart('a/aborted')
      await store.writePart(upload, 1, randomBytes(SLOT_BYTES), SLOT_BYTES)
      await store.writePart(upload, 2, randomBytes(100))
      await store.writePart(upload, 1, randomBytes(SLOT_BYTES), SLOT_BYTES)
      // data, one claim and its slotted write, two files
      assert.equal((await readdir(path.join(root, '.tmp', `${upload.uploadId}.mpu`))).length, 5)
      await store.abortMultipart(upload)
      assert.deepEqual(await filesUnder(root), [])
    })

    test('the state is all in files: another store on the root completes what this one wrote', async () => {
      const root = await fresh()
      const writerA = await LocalBlobStore.open(root)
      const writerB = await LocalBlobStore.open(root)
      const parts = [
        randomBytes(SLOT_BYTES),
        randomBytes(SLOT_BYTES),
        randomBytes(SLOT_BYTES),
        randomBytes(10),
      ]
      const upload = await writerA.createMultipart('a/shared')
      // Odd parts through one process, even ones through the other, concurrently.
      const written = await Promise.all(
        parts.map((bytes, i) => (i % 2 ? writerB : writerA).writePart(upload, i + 1, bytes, bytes.length)),
      )
      // A third process, which saw none of the parts land, completes: it hashes everything itself.
      const completer = await LocalBlobStore.open(root)
      assert.deepEqual(await completer.completeMultipart(upload, written), {
        size: 3 * SLOT_BYTES + 10,
        sha256: sha256(Buffer.concat(parts)),
        crc32: crc32(Buffer.concat(parts)),
      })
      assert.ok((await readAll(await writerA.get('a/shared'))).equals(Buffer.concat(parts)))
      assert.deepEqual(await uploadDirs(root), [])
    })

    test('an upload directory is a leftover dated by the newest thing in it', async () => {
      const root = await fresh()
      const store = await LocalBlobStore.open(root)
      const stale = await store.createMultipart('a/stale')
      await store.writePart(stale, 1, randomBytes(100), 100)
      await store.writePart(stale, 2, randomBytes(100))
      const live = await store.createMultipart('a/live')
      await store.writePart(live, 1, randomBytes(100), 100)
      const staleDir = path.join(root, '.tmp', `${stale.uploadId}.mpu`)
      const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
      for (const entry of await readdir(staleDir)) {
        // A claim is a link, whose own time counts.
        await lutimes(path.join(staleDir, entry), twoHoursAgo, twoHoursAgo)
      }
      await utimes(staleDir, twoHoursAgo, twoHoursAgo)
      const dated: Record<string, number> = {}
      for await (const leftover of store.leftovers()) dated[leftover.id] = leftover.modifiedAt
      assert.equal(Math.round(dated[`${stale.uploadId}.mpu`] ?? 0), twoHoursAgo.getTime())
      assert.ok((dated[`${live.uploadId}.mpu`] ?? 0) > Date.now() - 60_000)
      assert.deepEqual(await uploadDirs(root), [`${live.uploadId}.mpu`, `${stale.uploadId}.mpu`].sort())
      await store.abortMultipart(live)
      await store.abortMultipart(stale)
    })

    test('a part is fsynced, with the directory entries naming it, before writePart resolves', async (t) => {
      const root = await fresh()
      const store = await LocalBlobStore.open(root)
      const upload = await store.createMultipart('a/durable')
      const dir = path.join(root, '.tmp', `${upload.uploadId}.mpu`)
      // Records what every fsync of this process covered, by the path behind its descriptor.
      const synced: string[] = []
      await onEveryFileHandle(t, path.join(root, '.tmp'), 'sync', (original) => {
        return function (this: FileHandle) {
          synced.push(readlinkSync(`/proc/self/fd/${this.fd}`))
          return original.call(this)
        }
      })
      const slotted = await store.writePart(upload, 1, randomBytes(SLOT_BYTES), SLOT_BYTES)
      assert.deepEqual(synced.sort(), [dir, path.join(dir, 'data')].sort())
      synced.length = 0
      const own = await store.writePart(upload, 2, randomBytes(100))
      const partFile = (await readdir(dir)).find((name) => name.startsWith('2-')) as string
      assert.deepEqual(synced.sort(), [dir, path.join(dir, partFile)].sort())
      synced.length = 0
      await store.completeMultipart(upload, [slotted, own])
      // The blob itself, then its directory, as for put.
      assert.equal(synced.at(-1), path.join(root, 'a'))
    })
  })

  describe('symbolic links below the root are never followed', () => {
    let root = ''
    let outside = ''
    let store: LocalBlobStore
    const refused = /symbolic link/

    before(async () => {
      root = await fresh()
      outside = await fresh()
      store = await LocalBlobStore.open(root)
      await writeFile(path.join(outside, 'secret.blob'), 'secret')
      // A directory on the way is a link out of the root...
      await symlink(outside, path.join(root, 'linked'))
      // ...or the blob file itself is.
      await mkdir(path.join(root, 'plain'))
      await symlink(path.join(outside, 'secret.blob'), path.join(root, 'plain/secret.blob'))
    })

    for (const key of ['linked/secret', 'plain/secret']) {
      test(`${key}: get, stat, put and delete refuse`, async () => {
        await assert.rejects(() => store.get(key), refused)
        await assert.rejects(() => store.get(key, { start: 0, end: 0 }), refused)
        await assert.rejects(() => store.stat(key), refused)
        await assert.rejects(() => store.put(key, Buffer.from('overwritten')), refused)
        await assert.rejects(() => store.delete(key), refused)
        assert.equal(await readFile(path.join(outside, 'secret.blob'), 'utf8'), 'secret')
        assert.deepEqual(await readdir(path.join(root, '.tmp')), [])
      })
    }

    test('a new key beneath a linked directory creates nothing outside the root', async () => {
      await assert.rejects(() => store.put('linked/new', Buffer.from('x')), refused)
      await assert.rejects(() => store.put('linked/sub/dir/new', Buffer.from('x')), refused)
      assert.deepEqual(await filesUnder(outside), ['secret.blob'])
      assert.deepEqual(await readdir(outside), ['secret.blob'])
    })

    test('a directory that reads trusted, then replaced by a link, is refused again within a second; writes never trust', async () => {
      await store.put('swap/blob', Buffer.from('mine'))
      assert.equal((await readAll(await store.get('swap/blob'))).toString(), 'mine')
      await rename(path.join(root, 'swap'), path.join(root, 'swap-old'))
      await mkdir(path.join(outside, 'swapped'))
      await writeFile(path.join(outside, 'swapped/blob.blob'), 'secret')
      await symlink(path.join(outside, 'swapped'), path.join(root, 'swap'))
      await assert.rejects(() => store.put('swap/other', Buffer.from('x')), refused)
      await new Promise((resolve) => setTimeout(resolve, 1100))
      await assert.rejects(() => store.get('swap/blob'), refused)
      assert.deepEqual(await readdir(path.join(outside, 'swapped')), ['blob.blob'])
    })

    test('keys beside the links work normally', async () => {
      await store.put('plain/other', Buffer.from('fine'))
      assert.equal((await readAll(await store.get('plain/other'))).toString(), 'fine')
      await assert.rejects(() => store.get('plain/absent'), BlobNotFoundError)
    })
  })
})
