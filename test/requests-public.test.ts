// A file request's public API, as its page and any other client use it: reading the request, preparing a
// submitter's uploads, sending the bytes with the real @vercel/blob client, following them by their grants;
// and what the owner then sees. Limits (the owner's extension) are in requests-limits.test.ts.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { assertError, call, chars, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { newFolder, newRequest, publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import {
  cancelPublic,
  preparePublic,
  publicApi,
  sendBytes,
  settle,
  statusOf,
  submit,
} from './support/submissions.ts'
import { type ListeningContext, sha256, startListening } from './support/uploads.ts'

/** Upload intents recorded for a request: a refused preparation must leave none. */
async function intentsOf(c: ListeningContext, requestId: string): Promise<number> {
  const row = await c.db.kysely
    .selectFrom('upload_intents')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('request_id', '=', requestId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

for (const engine of ENGINES) {
  describe(`file request public API [${engine}]`, () => {
    let c: ListeningContext
    let a: TestAccount
    before(async () => {
      c = await startListening(engine)
      a = await createAccount(c.app)
    })
    after(async () => c?.stop())

    test('reads what the page shows: nothing of the owner or folder; unknown 404, disabled 410', async () => {
      const folder = await newFolder(c.app, a.token)
      const r = await newRequest(c.app, a.token, { description: 'Your <b>drafts</b>', folderId: folder.id })
      const publicId = publicIdOf(r)
      const res = await call(c.app, 'GET', publicApi(publicId))
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, {
        data: {
          title: 'Send me files',
          description: 'Your <b>drafts</b>',
          collectEmail: true,
          emailRequired: true,
          deadline: null,
          maxFiles: null,
          maxFileSize: c.config.maxFileSize,
          allowedTypes: [],
          uploadsUrl: `${c.base}/api/v1/public/requests/${publicId}/uploads`,
        },
      })
      assertError(await call(c.app, 'GET', publicApi('x'.repeat(32))), 404, 'not_found')
      assertError(await call(c.app, 'GET', publicApi('x'.repeat(129))), 400, 'invalid_request')
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: false } })
      const gone = await call(c.app, 'GET', publicApi(publicId))
      assertError(gone, 410, 'gone')
      assert.doesNotMatch(JSON.stringify(gone.body), /Send me files|drafts/)
    })

    test('a submission: files in the request folder, byte for byte, one Submission each, counted', async () => {
      const folder = await newFolder(c.app, a.token)
      const r = await newRequest(c.app, a.token, { folderId: folder.id })
      const publicId = publicIdOf(r)
      const files = [
        { name: 'notes.txt', type: 'text/plain', content: 'The minutes.\n' },
        { name: 'برنامه 📄.pdf', type: 'application/pdf', content: '%PDF-1.4\n% test\n' },
      ]
      // Line breaks as a browser's form sends them (\r\n) are stored as \n.
      const fields = { submitterName: ' Ada ', submitterEmail: 'ada@example.com', message: 'Both\r\nfiles' }
      const { statuses, grants } = await submit(c.app, publicId, fields, files)
      assert.deepEqual(
        statuses,
        grants.map((grant) => ({ intentId: grant.intentId, status: 'complete' })),
      )

      const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
      assert.equal(subs.status, 200)
      const listed = subs.body.data as {
        submitterName: string
        submitterEmail: string
        message: string
        file: { id: string; name: string; size: number }
      }[]
      assert.deepEqual(
        listed.map((s) => [s.submitterName, s.submitterEmail, s.message, s.file.name, s.file.size]).sort(),
        files
          .map((f) => ['Ada', 'ada@example.com', 'Both\nfiles', f.name, Buffer.byteLength(f.content)])
          .sort(),
      )
      const owned = await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token: a.token })
      assert.deepEqual(
        owned.body.data.map((f: { id: string }) => f.id).sort(),
        listed.map((s) => s.file.id).sort(),
      )
      for (const s of listed) {
        const download = await fetch(`${c.base}/api/v1/files/${s.file.id}/download`, {
          headers: { authorization: `Bearer ${a.token}` },
        })
        const content = files.find((f) => f.name === s.file.name)?.content ?? ''
        assert.equal(sha256(Buffer.from(await download.arrayBuffer())), sha256(content))
      }
      const request = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
      assert.equal(request.body.data.submissionCount, 2)
      const folderNow = await call(c.app, 'GET', `/api/v1/folders/${folder.id}`, { token: a.token })
      assert.equal(folderNow.body.data.fileCount, 2)
    })

    test("the submitter's fields: bounds, email rules, control characters; nothing written on refusal", async () => {
      const r = await newRequest(c.app, a.token)
      const publicId = publicIdOf(r)
      const file = [{ name: 'a.txt', type: 'text/plain', content: 'a' }]
      const refused = async (fields: Record<string, unknown>, field: string, message: RegExp) => {
        const res = await preparePublic(c.app, publicId, fields, file)
        assert.match(assertError(res, 400, 'invalid_request'), message)
        assert.equal(res.body.error.field, field)
      }
      await refused({}, 'submitterEmail', /email address/)
      await refused({ submitterEmail: '   ' }, 'submitterEmail', /email address/)
      await refused({ submitterEmail: 'a@b@c' }, 'submitterEmail', /not a valid email/)
      await refused({ submitterEmail: `${chars(250)}@x.io` }, 'submitterEmail', /at most 254/)
      await refused({ submitterEmail: 'a@x.io', submitterName: chars(101) }, 'submitterName', /at most 100/)
      await refused({ submitterEmail: 'a@x.io', submitterName: 'a\u0007b' }, 'submitterName', /control/)
      await refused({ submitterEmail: 'a@x.io', message: chars(1001) }, 'message', /at most 1000/)
      await refused({ submitterEmail: 'a@x.io', message: 'a\u001bb' }, 'message', /control/)
      const noFiles = await call(c.app, 'POST', `${publicApi(publicId)}/uploads`, {
        body: { submitterEmail: 'a@x.io', files: [] },
      })
      assertError(noFiles, 400, 'invalid_request')
      assert.equal(noFiles.body.error.field, 'files')
      const tooMany = await call(c.app, 'POST', `${publicApi(publicId)}/uploads`, {
        body: {
          submitterEmail: 'a@x.io',
          files: Array.from({ length: 101 }, (_, i) => ({ name: `${i}.txt`, type: 'text/plain', size: 1 })),
        },
      })
      assert.match(assertError(tooMany, 400, 'invalid_request'), /at most 100 items/)
      const huge = await call(c.app, 'POST', `${publicApi(publicId)}/uploads`, {
        body: {
          submitterEmail: 'a@x.io',
          files: [{ name: 'big.bin', type: 'application/octet-stream', size: c.config.maxFileSize + 1 }],
        },
      })
      assert.equal(assertError(huge, 400, 'invalid_request').length > 0, true)
      assert.equal(huge.body.error.field, 'files[0].size')
      assert.equal(await intentsOf(c, r.id), 0)

      // At the bounds, with a line break in the message: accepted and kept as typed (trimmed).
      const { statuses } = await submit(
        c.app,
        publicId,
        { submitterEmail: ' b@x.io ', submitterName: chars(100, 'n'), message: `${chars(999, 'm')}\n` },
        file,
      )
      assert.equal(statuses[0]?.status, 'complete')
      const [sub] = (await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })).body
        .data
      assert.equal(sub.submitterEmail, 'b@x.io')
      assert.equal(sub.submitterName, chars(100, 'n'))
      assert.equal(sub.message, chars(999, 'm'))

      // Not collected: whatever is sent is dropped; optional: absent is fine.
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { collectEmail: false } })
      await submit(c.app, publicId, { submitterEmail: 'dropped@x.io' }, file)
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, {
        token: a.token,
        body: { collectEmail: true, emailRequired: false },
      })
      await submit(c.app, publicId, {}, file)
      const emails = (
        await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
      ).body.data.map((s: { submitterEmail: string | null }) => s.submitterEmail)
      assert.deepEqual(emails, [null, null, 'b@x.io'])
    })

    test('grants authorize status and cancelling, in the body; a wrong grant refuses them all', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const other = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      const files = [
        { name: 'a.txt', type: 'text/plain', content: 'a' },
        { name: 'b.txt', type: 'text/plain', content: 'b' },
      ]
      const prepared = await preparePublic(c.app, publicId, {}, files)
      assert.equal(prepared.status, 201)
      const grants = prepared.body.data.uploads
      assert.equal('statusUrl' in grants[0], false)
      assert.deepEqual(await statusOf(c.app, publicId, grants), [
        { intentId: grants[0].intentId, status: 'pending', phase: 'uploading' },
        { intentId: grants[1].intentId, status: 'pending', phase: 'uploading' },
      ])
      const wrong = [
        {
          ...grants[0],
          clientPayload: { ...grants[0].clientPayload, grant: `${grants[0].clientPayload.grant}x` },
        },
      ]
      const refusedStatus = await call(c.app, 'POST', `${publicApi(publicId)}/uploads/status`, {
        body: {
          uploads: [...wrong, grants[1]].map((g) => ({ intentId: g.intentId, grant: g.clientPayload.grant })),
        },
      })
      assertError(refusedStatus, 401, 'unauthorized')
      const elsewhere = await call(c.app, 'POST', `${publicApi(publicIdOf(other))}/uploads/status`, {
        body: { uploads: [{ intentId: grants[0].intentId, grant: grants[0].clientPayload.grant }] },
      })
      assertError(elsewhere, 401, 'unauthorized')

      await cancelPublic(c.app, publicId, [grants[0]])
      await cancelPublic(c.app, publicId, [grants[0]])
      await sendBytes(grants[1], 'b')
      await assert.rejects(sendBytes(grants[0], 'a'))
      const statuses = await settle(c.app, publicId, grants)
      assert.deepEqual(statuses, [
        { intentId: grants[0].intentId, status: 'error', error: 'The upload was cancelled.' },
        { intentId: grants[1].intentId, status: 'complete' },
      ])
      // Cancelling what has stored its file changes nothing.
      await cancelPublic(c.app, publicId, [grants[1]])
      assert.equal((await statusOf(c.app, publicId, [grants[1]]))[0]?.status, 'complete')
    })

    test('disabled after preparing: prepared uploads finish; deleted: the upload ends in error, nothing kept', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      const file = [{ name: 'late.txt', type: 'text/plain', content: 'late' }]
      const prepared = (await preparePublic(c.app, publicId, {}, file)).body.data.uploads
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: false } })
      assertError(await preparePublic(c.app, publicId, {}, file), 410, 'gone')
      await sendBytes(prepared[0], 'late')
      assert.equal((await settle(c.app, publicId, prepared))[0]?.status, 'complete')
      assert.equal(
        (await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })).body.data.submissionCount,
        1,
      )

      const doomed = await newRequest(c.app, a.token, { collectEmail: false })
      const doomedId = publicIdOf(doomed)
      const grants = (await preparePublic(c.app, doomedId, {}, file)).body.data.uploads
      const before = (await call(c.app, 'GET', '/api/v1/files?limit=100', { token: a.token })).body.data
        .length
      await c.db.kysely.deleteFrom('file_requests').where('id', '=', doomed.id).execute()
      await sendBytes(grants[0], 'late')
      // The request is gone, so its public API is too; the intent still ends, in error, without a file.
      for (let i = 0; i < 500; i++) {
        const intent = await c.db.kysely
          .selectFrom('upload_intents')
          .select(['state', 'error', 'file_id'])
          .where('id', '=', grants[0].intentId)
          .executeTakeFirstOrThrow()
        if (intent.state === 'error') {
          assert.match(String(intent.error), /request was deleted/)
          assert.equal(await c.blobs.stat(blobKeyOf(a.id, String(intent.file_id))), undefined)
          break
        }
        assert.notEqual(intent.state, 'complete')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const afterCount = (await call(c.app, 'GET', '/api/v1/files?limit=100', { token: a.token })).body.data
        .length
      assert.equal(afterCount, before)
    })
  })
}
