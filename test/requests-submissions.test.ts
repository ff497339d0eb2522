// What people send through a file request, as its owner sees it: submissions listed with their shapes and
// counted exactly (concurrent ones too), the email a request collects or requires, the bounds of what is
// typed, what the public page learns of a request, and pagination that neither repeats nor skips while
// submissions come and go. Requests themselves are in requests.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { AppError } from '../src/errors.ts'
import {
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
  type TestAccount,
} from './support/harness.ts'
import { newFolder, newRequest, publicIdOf, REQUESTS, tick } from './support/requests-helpers.ts'

async function rejectsWith(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error))
    assert.equal(error.code, code)
    if (message) assert.match(error.message, message)
    return true
  })
}

describeEachEngine('file request submissions', (ctx) => {
  async function setup(body: Record<string, unknown> = {}) {
    const c = ctx()
    const a = await createAccount(c.app)
    const r = await newRequest(c.app, a.token, body)
    return { c, app: c.app, a, r, publicId: publicIdOf(r), requests: c.app.services.publicRequests }
  }

  async function submissionCount(app: App, a: TestAccount, requestId: string): Promise<number> {
    const res = await call(app, 'GET', `${REQUESTS}/${requestId}`, { token: a.token })
    return res.body.data.submissionCount
  }

  test('submissions list with full shapes; the snapshot survives the file', async () => {
    const { c, app, a, r, publicId, requests } = await setup()
    const first = await createFile(c, a.id, {
      name: 'report.pdf',
      contentType: 'application/pdf',
      content: 'x',
    })
    const second = await createFile(c, a.id, {
      name: 'photo.jpg',
      contentType: 'image/jpeg',
      content: 'abcd',
    })

    const s1 = await requests.addSubmission({
      publicId,
      fileId: first.id,
      submitterName: '  Ada Lovelace ',
      submitterEmail: 'ada@example.com',
      message: 'Here it is',
    })
    assert.match(s1.id, /^sub_[0-9a-z]{26}$/)
    await tick()
    const s2 = await requests.addSubmission({
      publicId,
      fileId: second.id,
      submitterEmail: 'bob@example.com',
      submitterName: '   ',
    })
    const expected = {
      data: [
        {
          submitterName: null,
          submitterEmail: 'bob@example.com',
          message: null,
          createdAt: new Date(s2.createdAt).toISOString(),
          file: { id: second.id, name: 'photo.jpg', contentType: 'image/jpeg', size: 4 },
        },
        {
          submitterName: 'Ada Lovelace',
          submitterEmail: 'ada@example.com',
          message: 'Here it is',
          createdAt: new Date(s1.createdAt).toISOString(),
          file: { id: first.id, name: 'report.pdf', contentType: 'application/pdf', size: 1 },
        },
      ],
      pagination: { nextCursor: null },
    }
    const list = await call(app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, expected)
    assert.match(String(list.body.data[0]?.createdAt), ISO_MS)

    assert.equal(await submissionCount(app, a, r.id), 2)
    const listed = await call(app, 'GET', REQUESTS, { token: a.token })
    assert.deepEqual(listed.body.data, [{ ...r, submissionCount: 2 }])

    // The file goes (its row, as a deletion does); the submission keeps what was submitted.
    await c.db.kysely.deleteFrom('files').where('id', '=', first.id).execute()
    await c.blobs.delete(first.blobKey)
    const after = await call(app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
    assert.deepEqual(after.body, expected)
    assert.equal(await submissionCount(app, a, r.id), 2)
  })

  test('concurrent submissions are all counted', async () => {
    const { c, app, a, r, publicId, requests } = await setup()
    const file = await createFile(c, a.id)
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        requests.addSubmission({ publicId, fileId: file.id, submitterEmail: `p${i}@example.com` }),
      ),
    )
    assert.equal(await submissionCount(app, a, r.id), 10)
    const list = await call(app, 'GET', `${REQUESTS}/${r.id}/submissions?limit=100`, { token: a.token })
    assert.equal(list.body.data.length, 10)
  })

  test('addSubmission refuses an inactive request (409) and counts nothing', async () => {
    const { c, app, a, r, publicId, requests } = await setup()
    const file = await createFile(c, a.id)
    await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: false } })
    await rejectsWith(
      requests.addSubmission({ publicId, fileId: file.id, submitterEmail: 'a@example.com' }),
      'conflict',
      /no longer accepting/,
    )
    assert.equal(await submissionCount(app, a, r.id), 0)
    const list = await call(app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
    assert.deepEqual(list.body, { data: [], pagination: { nextCursor: null } })

    // Reactivated, it accepts again.
    await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: true } })
    await requests.addSubmission({ publicId, fileId: file.id, submitterEmail: 'a@example.com' })
    assert.equal(await submissionCount(app, a, r.id), 1)
  })

  test('addSubmission enforces a required email, and drops one that is not collected', async () => {
    const { c, app, a, r, publicId, requests } = await setup()
    const file = await createFile(c, a.id)
    for (const submitterEmail of [undefined, null, '', '   ']) {
      await rejectsWith(
        requests.addSubmission({ publicId, fileId: file.id, submitterEmail }),
        'invalid_request',
        /requires the submitter email/,
      )
    }
    await rejectsWith(
      requests.addSubmission({ publicId, fileId: file.id, submitterEmail: 'not an email' }),
      'invalid_request',
      /not a valid email/,
    )
    assert.equal(await submissionCount(app, a, r.id), 0)

    // Collected but optional: absent is fine, present must still be valid.
    await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { emailRequired: false } })
    const optional = await requests.addSubmission({ publicId, fileId: file.id })
    assert.equal(optional.submitterEmail, null)
    await rejectsWith(
      requests.addSubmission({ publicId, fileId: file.id, submitterEmail: 'a@b@c' }),
      'invalid_request',
    )
    const given = await requests.addSubmission({
      publicId,
      fileId: file.id,
      submitterEmail: ' x@example.org ',
    })
    assert.equal(given.submitterEmail, 'x@example.org')

    // Not collected: whatever is sent is dropped.
    await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { collectEmail: false } })
    const dropped = await requests.addSubmission({
      publicId,
      fileId: file.id,
      submitterEmail: 'ignored@example.com',
    })
    assert.equal(dropped.submitterEmail, null)
    assert.equal(await submissionCount(app, a, r.id), 3)
    const list = await call(app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
    assert.deepEqual(
      list.body.data.map((s: { submitterEmail: string | null }) => s.submitterEmail),
      [null, 'x@example.org', null],
    )
  })

  test('addSubmission: unknown link, a file of another account, and the bounds of what is typed', async () => {
    const { c, app, a, r, publicId, requests } = await setup({ collectEmail: false })
    const b = await createAccount(app)
    const theirs = await createFile(c, b.id)
    const mine = await createFile(c, a.id)
    await rejectsWith(requests.addSubmission({ publicId: 'nope', fileId: mine.id }), 'not_found')
    await rejectsWith(requests.addSubmission({ publicId, fileId: theirs.id }), 'not_found')
    await rejectsWith(requests.addSubmission({ publicId, fileId: 'fil_absent' }), 'not_found')
    await rejectsWith(
      requests.addSubmission({ publicId, fileId: mine.id, submitterName: chars(101) }),
      'invalid_request',
      /name.*at most 100/,
    )
    await rejectsWith(
      requests.addSubmission({ publicId, fileId: mine.id, message: chars(1001) }),
      'invalid_request',
      /message.*at most 1000/,
    )
    assert.equal(await submissionCount(app, a, r.id), 0)
    const atBounds = await requests.addSubmission({
      publicId,
      fileId: mine.id,
      submitterName: chars(100, 'n'),
      message: chars(1000, 'm'),
    })
    assert.equal(atBounds.submitterName?.length, 100)
    assert.equal(atBounds.message?.length, 1000)
    assert.equal(await submissionCount(app, a, r.id), 1)
  })

  test('the public request service gives the public page what it needs', async () => {
    const { c, a, r, publicId, requests } = await setup({ description: 'Please', emailRequired: false })
    const folder = await newFolder(c.app, a.token)
    await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { folderId: folder.id } })
    assert.deepEqual(await requests.get(publicId), {
      id: r.id,
      accountId: a.id,
      folderId: folder.id,
      title: r.title,
      description: 'Please',
      collectEmail: true,
      emailRequired: false,
      isActive: true,
    })
    await rejectsWith(requests.get('nope'), 'not_found')
  })

  test('submission pagination stays correct while submissions are added and removed mid-walk', async () => {
    const { c, app, a, r, publicId, requests } = await setup()
    const file = await createFile(c, a.id)
    const made: string[] = []
    for (let i = 0; i < 6; i++) {
      made.push(
        (await requests.addSubmission({ publicId, fileId: file.id, submitterEmail: `s${i}@x.io` })).id,
      )
      await tick()
    }
    const newestFirst = [...made].reverse()

    // Submissions are listed without ids; walk by their emails.
    const pages: (string | null)[][] = []
    let cursor: string | null = null
    let added = ''
    do {
      const res: {
        body: { data: { submitterEmail: string | null }[]; pagination: { nextCursor: string | null } }
      } = await call(
        app,
        'GET',
        `${REQUESTS}/${r.id}/submissions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        {
          token: a.token,
        },
      )
      pages.push(res.body.data.map((s) => s.submitterEmail))
      cursor = res.body.pagination.nextCursor
      if (pages.length === 1) {
        added = (await requests.addSubmission({ publicId, fileId: file.id, submitterEmail: 'new@x.io' })).id
        await c.db.kysely
          .deleteFrom('submissions')
          .where('id', 'in', [newestFirst[1] as string, newestFirst[3] as string])
          .execute()
      }
    } while (cursor !== null)
    assert.ok(added)
    // The newer submission is before the cursor; the two removed ones are gone; nothing repeats.
    assert.deepEqual(pages, [['s5@x.io', 's4@x.io'], ['s3@x.io', 's1@x.io'], ['s0@x.io']])
  })
})
