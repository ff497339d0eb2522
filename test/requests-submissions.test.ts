// What people send through a file request, as its owner sees it: submissions listed with their shapes and
// counted exactly (concurrent ones too), a disabled request that takes nothing until it is enabled again, other
// accounts that see none of it, and pagination that neither repeats nor skips while submissions come and go.
// Every submission arrives as on the request's page: prepared through the public API, its bytes sent with the
// @vercel/blob client, processed. The public API itself is in requests-public.test.ts.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { assertError, call, createAccount, ENGINES, ISO_MS, type TestAccount } from './support/harness.ts'
import { newRequest, publicIdOf, REQUESTS, tick } from './support/requests-helpers.ts'
import { preparePublic, submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

for (const engine of ENGINES) {
  describe(`file request submissions [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine)
    })
    after(async () => c?.stop())

    async function setup(body: Record<string, unknown> = {}) {
      const a = await createAccount(c.app)
      const r = await newRequest(c.app, a.token, body)
      return { a, r, publicId: publicIdOf(r) }
    }

    async function submissionCount(a: TestAccount, requestId: string): Promise<number> {
      const res = await call(c.app, 'GET', `${REQUESTS}/${requestId}`, { token: a.token })
      return res.body.data.submissionCount
    }

    test('submissions list with full shapes; the snapshot survives the file', async () => {
      const { a, r, publicId } = await setup()
      await submit(
        c.app,
        publicId,
        { submitterName: '  Ada Lovelace ', submitterEmail: 'ada@example.com', message: 'Here it is' },
        [{ name: 'report.pdf', type: 'application/pdf', content: '%PDF-1.4\n' }],
      )
      await tick()
      await submit(c.app, publicId, { submitterEmail: 'bob@example.com', submitterName: '   ' }, [
        { name: 'photo.txt', type: 'text/plain', content: 'abcd' },
      ])
      const list = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
      assert.equal(list.status, 200)
      const [second, first] = list.body.data
      const expected = {
        data: [
          {
            submitterName: null,
            submitterEmail: 'bob@example.com',
            message: null,
            createdAt: second.createdAt,
            file: { id: second.file.id, name: 'photo.txt', contentType: 'text/plain', size: 4 },
          },
          {
            submitterName: 'Ada Lovelace',
            submitterEmail: 'ada@example.com',
            message: 'Here it is',
            createdAt: first.createdAt,
            file: { id: first.file.id, name: 'report.pdf', contentType: 'application/pdf', size: 9 },
          },
        ],
        pagination: { nextCursor: null },
      }
      assert.deepEqual(list.body, expected)
      assert.match(String(second.createdAt), ISO_MS)
      assert.ok(second.createdAt > first.createdAt)
      // The submission was recorded with its file: the same instant.
      const file = await call(c.app, 'GET', `/api/v1/files/${first.file.id}`, { token: a.token })
      assert.equal(file.body.data.createdAt, first.createdAt)

      assert.equal(await submissionCount(a, r.id), 2)
      const listed = await call(c.app, 'GET', REQUESTS, { token: a.token })
      assert.deepEqual(listed.body.data, [{ ...r, submissionCount: 2 }])

      // The file goes; the submission keeps what was submitted.
      const deleted = await call(c.app, 'DELETE', `/api/v1/files/${first.file.id}`, { token: a.token })
      assert.equal(deleted.status, 200)
      const afterDelete = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
      assert.deepEqual(afterDelete.body, expected)
      assert.equal(await submissionCount(a, r.id), 2)
    })

    test('concurrent submissions are all counted', async () => {
      const { a, r, publicId } = await setup()
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          submit(c.app, publicId, { submitterEmail: `p${i}@example.com` }, [
            { name: `${i}.txt`, type: 'text/plain', content: `file ${i}` },
          ]),
        ),
      )
      assert.equal(await submissionCount(a, r.id), 10)
      const list = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions?limit=100`, { token: a.token })
      assert.equal(list.body.data.length, 10)
    })

    test('a disabled request takes nothing (410) and counts nothing; enabled again, it takes files', async () => {
      const { a, r, publicId } = await setup()
      const file = [{ name: 'a.txt', type: 'text/plain', content: 'a' }]
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: false } })
      const refused = await preparePublic(c.app, publicId, { submitterEmail: 'a@example.com' }, file)
      assert.match(assertError(refused, 410, 'gone'), /no longer accepts files/)
      assert.equal(await submissionCount(a, r.id), 0)
      const list = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
      assert.deepEqual(list.body, { data: [], pagination: { nextCursor: null } })

      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { isActive: true } })
      await submit(c.app, publicId, { submitterEmail: 'a@example.com' }, file)
      assert.equal(await submissionCount(a, r.id), 1)
    })

    test("another account sees none of a request's submissions", async () => {
      const { a, r, publicId } = await setup()
      const b = await createAccount(c.app)
      await submit(c.app, publicId, { submitterEmail: 'x@example.com' }, [
        { name: 'a.txt', type: 'text/plain', content: 'a' },
      ])
      assert.equal(await submissionCount(a, r.id), 1)
      assertError(
        await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: b.token }),
        404,
        'not_found',
      )
      assertError(await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: b.token }), 404, 'not_found')
      const theirFiles = await call(c.app, 'GET', '/api/v1/files', { token: b.token })
      assert.deepEqual(theirFiles.body, { data: [], pagination: { nextCursor: null } })
    })

    test('submission pagination stays correct while submissions are added and removed mid-walk', async () => {
      const { a, r, publicId } = await setup()
      const one = (email: string) =>
        submit(c.app, publicId, { submitterEmail: email }, [
          { name: 'a.txt', type: 'text/plain', content: email },
        ])
      for (let i = 0; i < 6; i++) {
        await one(`s${i}@x.io`)
        await tick()
      }
      const made = await c.db.kysely
        .selectFrom('submissions')
        .select(['id', 'submitter_email'])
        .where('request_id', '=', r.id)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
      assert.deepEqual(
        made.map((s) => s.submitter_email),
        ['s5@x.io', 's4@x.io', 's3@x.io', 's2@x.io', 's1@x.io', 's0@x.io'],
      )

      // Submissions are listed without ids; walk by their emails.
      const pages: (string | null)[][] = []
      let cursor: string | null = null
      do {
        const res: {
          body: { data: { submitterEmail: string | null }[]; pagination: { nextCursor: string | null } }
        } = await call(
          c.app,
          'GET',
          `${REQUESTS}/${r.id}/submissions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
          { token: a.token },
        )
        pages.push(res.body.data.map((s) => s.submitterEmail))
        cursor = res.body.pagination.nextCursor
        if (pages.length === 1) {
          await one('new@x.io')
          await c.db.kysely
            .deleteFrom('submissions')
            .where('id', 'in', [made[1]?.id as string, made[3]?.id as string])
            .execute()
        }
      } while (cursor !== null)
      // The newer submission is before the cursor; the two removed ones are gone; nothing repeats.
      assert.deepEqual(pages, [['s5@x.io', 's4@x.io'], ['s3@x.io', 's1@x.io'], ['s0@x.io']])
    })
  })
}
