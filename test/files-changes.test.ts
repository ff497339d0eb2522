// Changing files: PATCH renames and moves a file, DELETE removes one file or many, alone and concurrently. A
// change must leave the folder counts, the search index, the blobs and the shares exact, and a refused change
// must leave everything as it was.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createFolder, fileJson, folderCounts, insertShare } from './support/files-helpers.ts'
import { assertError, call, chars, createAccount, createFile, describeEachEngine } from './support/harness.ts'

describeEachEngine('files changes', (ctx) => {
  test('PATCH renames and moves a file, keeping folder counts and the search index exact', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const file = await createFile(c, a.id, { name: 'before-rename.txt' })
    const patch = (body: unknown) =>
      call(c.app, 'PATCH', `/api/v1/files/${file.id}`, { token: a.token, body })

    const renamed = await patch({ name: 'after-rename.txt' })
    assert.equal(renamed.status, 200)
    assert.deepEqual(renamed.body, { data: fileJson({ ...file, name: 'after-rename.txt' }) })
    const found = await call(c.app, 'GET', '/api/v1/files?query=after-ren', { token: a.token })
    assert.deepEqual(
      found.body.data.map((f: { id: string }) => f.id),
      [file.id],
    )
    const stale = await call(c.app, 'GET', '/api/v1/files?query=before-ren', { token: a.token })
    assert.deepEqual(stale.body.data, [])

    const moved = await patch({ folderId: one.id })
    assert.deepEqual(moved.body, {
      data: fileJson({ ...file, name: 'after-rename.txt' }, { ...one, fileCount: 1 }),
    })
    assert.equal(await folderCounts(c.app, a, one.id), 1)

    const both = await patch({ name: 'final.txt', folderId: two.id })
    assert.deepEqual(both.body, { data: fileJson({ ...file, name: 'final.txt' }, { ...two, fileCount: 1 }) })
    assert.equal(await folderCounts(c.app, a, one.id), 0)
    assert.equal(await folderCounts(c.app, a, two.id), 1)

    const same = await patch({ folderId: two.id })
    assert.deepEqual(same.body, both.body)
    assert.equal(await folderCounts(c.app, a, two.id), 1)

    const toRoot = await patch({ folderId: null })
    assert.deepEqual(toRoot.body, { data: fileJson({ ...file, name: 'final.txt' }) })
    assert.equal(await folderCounts(c.app, a, two.id), 0)
    const atRootAgain = await patch({ folderId: null })
    assert.deepEqual(atRootAgain.body, toRoot.body)

    const long = chars(255, 'n')
    assert.equal((await patch({ name: long })).body.data.name, long)
    assert.equal((await patch({ name: 'x' })).body.data.name, 'x')
  })

  test('PATCH bounds and refusals leave the file and the counts unchanged', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Kept')
    const theirs = await createFolder(c.app, b, 'Theirs')
    const file = await createFile(c, a.id, { name: 'stay.txt', folderId: folder.id })
    const patch = (body: unknown, id = file.id) =>
      call(c.app, 'PATCH', `/api/v1/files/${id}`, { token: a.token, body })

    for (const [body, pattern] of [
      [{}, /at least one field/],
      [{ name: '' }, /name.*at least 1/],
      [{ name: chars(256) }, /name.*at most 255/],
      [{ name: '   ' }, /name.*blank/],
      [{ name: 5 }, /name.*string/],
      [{ folderId: 5 }, /folderId.*string/],
      [{ folderId: '' }, /folderId.*at least 1/],
      [{ folderId: chars(101) }, /folderId.*at most 100/],
      [{ name: 'ok', size: 3 }, /Unknown field "size"/],
    ] as const) {
      assert.match(assertError(await patch(body), 400, 'invalid_request'), pattern, JSON.stringify(body))
    }
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${file.id}`, {
        token: a.token,
        rawBody: '{"name":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    assert.match(
      assertError(await patch({ folderId: theirs.id }), 404, 'not_found'),
      new RegExp(`Folder ${theirs.id}`),
    )
    assertError(await patch({ folderId: chars(100) }), 404, 'not_found')
    assertError(await patch({ name: 'x' }, 'fil_absent'), 404, 'not_found')
    assertError(await patch({ name: 'x' }, chars(129)), 400, 'invalid_request')

    const after = await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })
    assert.deepEqual(after.body, { data: fileJson(file, { ...folder, fileCount: 1 }) })
    assert.equal(await folderCounts(c.app, b, theirs.id), 0)
  })

  test('DELETE /files/{fileId} takes the file out of use and its folder count; deleted from the trash, its blob and share go', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Doomed')
    const file = await createFile(c, a.id, { folderId: folder.id })
    const kept = await createFile(c, a.id, { folderId: folder.id })
    const share = await insertShare(c, a.id, file.id, {
      isActive: true,
      expiresAt: null,
      viewCount: 0,
      downloadCount: 0,
    })
    assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.content.length })

    const deleted = await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
    assert.equal(deleted.status, 200)
    assert.deepEqual(deleted.body, { data: { id: file.id } })
    assert.equal(await folderCounts(c.app, a, folder.id), 1)
    assertError(await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token }), 404, 'not_found')
    assertError(await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token }), 404, 'not_found')
    // In the trash, its bytes and link wait; deleted from there, they go.
    assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.content.length })
    const forGood = await call(c.app, 'DELETE', `/api/v1/trash/${file.id}`, { token: a.token })
    assert.deepEqual(forGood.body, { data: { id: file.id } })
    assert.equal(await c.blobs.stat(file.blobKey), undefined)
    const shares = await c.db.kysely.selectFrom('shares').select('id').where('id', '=', share.id).execute()
    assert.deepEqual(shares, [])
    assert.equal(await folderCounts(c.app, a, folder.id), 1)
    assertError(await call(c.app, 'DELETE', `/api/v1/trash/${file.id}`, { token: a.token }), 404, 'not_found')
    assertError(
      await call(c.app, 'DELETE', `/api/v1/files/${chars(129)}`, { token: a.token }),
      400,
      'invalid_request',
    )
    assert.deepEqual(await c.blobs.stat(kept.blobKey), { size: kept.content.length })
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(list.body.data, [fileJson(kept, { ...folder, fileCount: 1 })])
  })

  test('DELETE /files deletes what it can, once, and lists exactly that', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const f1 = await createFile(c, a.id, { folderId: one.id })
    const f2 = await createFile(c, a.id, { folderId: one.id })
    const f3 = await createFile(c, a.id, { folderId: two.id })
    const f4 = await createFile(c, a.id)
    const keep = await createFile(c, a.id, { folderId: one.id })
    const foreign = await createFile(c, b.id)
    await insertShare(c, a.id, f3.id, { isActive: true, expiresAt: null, viewCount: 0, downloadCount: 0 })

    const res = await call(c.app, 'DELETE', '/api/v1/files', {
      token: a.token,
      body: { fileIds: [f3.id, 'fil_absent', f1.id, foreign.id, f3.id, f4.id, f2.id] },
    })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { data: { deletedIds: [f3.id, f1.id, f4.id, f2.id] } })
    const trash = await call(c.app, 'GET', '/api/v1/trash', { token: a.token })
    assert.deepEqual(
      trash.body.data.map((f: { id: string }) => f.id).sort(),
      [f1.id, f2.id, f3.id, f4.id].sort(),
    )
    const emptied = await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })
    assert.deepEqual(emptied.body, { data: { deletedCount: 4 } })
    for (const f of [f1, f2, f3, f4]) assert.equal(await c.blobs.stat(f.blobKey), undefined, f.id)
    for (const f of [keep, foreign])
      assert.deepEqual(await c.blobs.stat(f.blobKey), { size: f.content.length })
    assert.equal(await folderCounts(c.app, a, one.id), 1)
    assert.equal(await folderCounts(c.app, a, two.id), 0)
    assert.equal((await call(c.app, 'GET', `/api/v1/files/${foreign.id}`, { token: b.token })).status, 200)
    const shares = await c.db.kysely.selectFrom('shares').select('id').where('file_id', '=', f3.id).execute()
    assert.deepEqual(shares, [])
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(list.body.data, [fileJson(keep, { ...one, fileCount: 1 })])

    const again = await call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds: [f1.id] } })
    assert.deepEqual(again.body, { data: { deletedIds: [] } })
  })

  test('concurrent moves and overlapping deletes keep folder counts exact', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const file = await createFile(c, a.id, { folderId: one.id })
    const targets = [two.id, null, one.id, two.id, one.id, null, two.id, one.id, two.id, null, one.id, two.id]
    const moves = await Promise.all(
      targets.map((folderId) =>
        call(c.app, 'PATCH', `/api/v1/files/${file.id}`, { token: a.token, body: { folderId } }),
      ),
    )
    assert.deepEqual(
      moves.map((m) => m.status),
      targets.map(() => 200),
    )
    const where = (await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })).body.data
      .folderId
    assert.equal(await folderCounts(c.app, a, one.id), where === one.id ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, two.id), where === two.id ? 1 : 0)

    // Files moving crosswise between the same two folders must not deadlock on the counters.
    const x = await createFile(c, a.id, { folderId: one.id })
    const y = await createFile(c, a.id, { folderId: two.id })
    const swaps = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        call(c.app, 'PATCH', `/api/v1/files/${i % 2 ? x.id : y.id}`, {
          token: a.token,
          body: { folderId: (i >> 1) % 2 ? one.id : two.id },
        }),
      ),
    )
    assert.deepEqual(
      swaps.map((m) => m.status),
      swaps.map(() => 200),
    )
    const placed = await Promise.all(
      [x, y].map(
        async (f) => (await call(c.app, 'GET', `/api/v1/files/${f.id}`, { token: a.token })).body.data,
      ),
    )
    const count = (folderId: string) =>
      placed.filter((f) => f.folderId === folderId).length + (where === folderId ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, one.id), count(one.id))
    assert.equal(await folderCounts(c.app, a, two.id), count(two.id))
    await call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds: [x.id, y.id] } })

    const batch = []
    for (let i = 0; i < 12; i++) batch.push(await createFile(c, a.id, { folderId: i % 2 ? one.id : two.id }))
    const ids = batch.map((f) => f.id)
    const deletes = await Promise.all(
      [ids.slice(0, 8), ids.slice(4), ids.slice(2, 10), [...ids].reverse()].map((fileIds) =>
        call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds } }),
      ),
    )
    const deleted = deletes.flatMap((d) => d.body.data.deletedIds as string[])
    assert.deepEqual([...deleted].sort(), [...ids].sort(), 'each file is deleted by exactly one request')
    assert.equal(await folderCounts(c.app, a, one.id), where === one.id ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, two.id), where === two.id ? 1 : 0)
  })

  test('DELETE /files bounds: 1..100 ids of 1..128 characters, no other fields', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const bulk = (body: unknown) => call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body })
    const file = await createFile(c, a.id)
    const hundred = Array.from({ length: 99 }, (_, i) => `fil_none_${i}`)
    assert.deepEqual((await bulk({ fileIds: [...hundred, file.id] })).body, {
      data: { deletedIds: [file.id] },
    })
    assert.deepEqual((await bulk({ fileIds: [chars(128)] })).body, { data: { deletedIds: [] } })
    assert.deepEqual((await bulk({ fileIds: ['x'] })).body, { data: { deletedIds: [] } })
    for (const [body, pattern] of [
      [{ fileIds: [] }, /fileIds.*at least 1 item/],
      [{ fileIds: [...hundred, 'a', 'b'] }, /fileIds.*at most 100 items/],
      [{ fileIds: [''] }, /fileIds\[0\].*at least 1/],
      [{ fileIds: [chars(129)] }, /fileIds\[0\].*at most 128/],
      [{ fileIds: [5] }, /fileIds\[0\].*string/],
      [{ fileIds: 'fil_x' }, /fileIds.*array/],
      [{}, /missing the required field "fileIds"/],
      [{ fileIds: ['x'], force: true }, /Unknown field "force"/],
    ] as const) {
      assert.match(assertError(await bulk(body), 400, 'invalid_request'), pattern, JSON.stringify(body))
    }
  })
})
