// LocalBlobStore: the shared BlobStore suite, then what only a filesystem driver promises: where the files
// are, no temporary file left behind, leftovers of a crash swept, symbolic links never followed.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { BlobNotFoundError } from '../src/blob/blob-store.ts'
import { LocalBlobStore } from '../src/blob/local-blob-store.ts'
import { blobStoreSuite } from './blob-store.suite.ts'

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), 'coffer-blobs-'))
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

  test('open sweeps stale temporary files and keeps fresh ones', async () => {
    const root = await fresh()
    await LocalBlobStore.open(root)
    const temp = path.join(root, '.tmp')
    await writeFile(path.join(temp, 'crashed.part'), 'half a blob')
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
    await utimes(path.join(temp, 'crashed.part'), twoHoursAgo, twoHoursAgo)
    await writeFile(path.join(temp, 'in-flight.part'), 'another process is writing')

    await LocalBlobStore.open(root)
    assert.deepEqual(await readdir(temp), ['in-flight.part'])

    await new Promise((resolve) => setTimeout(resolve, 20))
    await LocalBlobStore.open(root, { staleTempAgeMs: 10 })
    assert.deepEqual(await readdir(temp), [])
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

    test('keys beside the links work normally', async () => {
      await store.put('plain/other', Buffer.from('fine'))
      assert.equal((await readAll(await store.get('plain/other'))).toString(), 'fine')
      await assert.rejects(() => store.get('plain/absent'), BlobNotFoundError)
    })
  })
})
