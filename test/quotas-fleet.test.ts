// Quotas exact under concurrency across a fleet (issue 45, 2): three server processes on one PostgreSQL database,
// twenty preparations sent at once and spread over the three cannot together pass an account's quota, whether
// they come from the owner's API, from a file request's public page (a submission counts toward its owner's
// quota), or from both at once: each takes the account's row before it sums what is stored and reserved.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { call, createAccount, createFile, ENGINES, startApp, type TestContext } from './support/harness.ts'
import { newRequest, publicIdOf } from './support/requests-helpers.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'

/** No rate limit and no cap on connections: every request of the test must be answered. */
const NO_LIMIT = {
  RATE_LIMIT_MAX: '1000000',
  MAX_CONNECTIONS_PER_ADDRESS: '0',
}

const PROCESSES = 3
const AT_ONCE = 20

describe('quotas across three processes on one PostgreSQL database', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let c: TestContext & { stop(): Promise<void> }
  const servers: ServerProcess[] = []
  /** The server of request `i`: each in turn. */
  const base = (i: number) => (servers[i % servers.length] as ServerProcess).base

  before(async () => {
    c = await startApp('postgres')
    const env = {
      ...NO_LIMIT,
      DATABASE_URL: c.config.databaseUrl as string,
      DATA_DIR: c.dataDir,
      ...c.bucket?.env,
    }
    for (let i = 0; i < PROCESSES; i++) servers.push(await startServer(env))
  })
  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await c?.stop()
  })

  /** The bytes the account's uploads under way reserve, as the database holds them. */
  async function reserved(accountId: string): Promise<number> {
    const row = await c.db.kysely
      .selectFrom('upload_intents')
      .select((eb) => eb.fn.sum<number>('size').as('bytes'))
      .where('account_id', '=', accountId)
      .where('state', '=', 'uploading')
      .executeTakeFirstOrThrow()
    return Number(row.bytes ?? 0)
  }

  const ownerPrepare = (i: number, token: string, size: number) =>
    fetch(`${base(i)}/api/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files: [{ name: `f${i}.bin`, type: 'application/octet-stream', size }] }),
    })

  const publicPrepare = (i: number, publicId: string, size: number) =>
    fetch(`${base(i)}/api/v1/public/requests/${publicId}/uploads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        submitterName: `Sender ${i}`,
        files: [{ name: `s${i}.txt`, type: 'text/plain', size }],
      }),
    })

  /** The answers' statuses, counted; every refusal is quota_exceeded. */
  async function outcome(answers: Response[]): Promise<{ granted: number; refused: number }> {
    let granted = 0
    let refused = 0
    for (const answer of answers) {
      const body = (await answer.json()) as { error?: { code: string } }
      if (answer.status === 201) granted++
      else {
        assert.equal(answer.status, 413, JSON.stringify(body))
        assert.equal(body.error?.code, 'quota_exceeded')
        refused++
      }
    }
    return { granted, refused }
  }

  test('twenty preparations of the owner at once, over three processes, take exactly what the quota leaves', async () => {
    const a = await createAccount(c.app)
    await c.app.services.quotas.set(a.id, { quotaBytes: 1000 })
    await createFile(c, a.id, { content: 'x'.repeat(150) })
    const answers = await Promise.all(
      Array.from({ length: AT_ONCE }, (_, i) => ownerPrepare(i, a.token, 100)),
    )
    assert.deepEqual(await outcome(answers), { granted: 8, refused: 12 })
    assert.equal(await reserved(a.id), 800)
    assert.equal((await c.app.services.quotas.usage(a.id)).bytes, 150)
  })

  test("twenty submissions at once to a file request, over three processes, within its owner's quota", async () => {
    const a = await createAccount(c.app)
    await c.app.services.quotas.set(a.id, { quotaBytes: 1000 })
    await createFile(c, a.id, { content: 'x'.repeat(450) })
    const publicId = publicIdOf(await newRequest(c.app, a.token, { collectEmail: false }))
    const answers = await Promise.all(
      Array.from({ length: AT_ONCE }, (_, i) => publicPrepare(i, publicId, 100)),
    )
    assert.deepEqual(await outcome(answers), { granted: 5, refused: 15 })
    assert.equal(await reserved(a.id), 500)
  })

  test('the owner and submitters at once, over three processes: together never past the quota', async () => {
    const a = await createAccount(c.app)
    await c.app.services.quotas.set(a.id, { quotaBytes: 2000 })
    const publicId = publicIdOf(await newRequest(c.app, a.token, { collectEmail: false }))
    // Sizes that do not divide the quota evenly: 20 of 130 bytes are 2,600; at most 15 fit in 2,000.
    const answers = await Promise.all(
      Array.from({ length: AT_ONCE }, (_, i) =>
        i % 2 === 0 ? ownerPrepare(i, a.token, 130) : publicPrepare(i, publicId, 130),
      ),
    )
    assert.deepEqual(await outcome(answers), { granted: 15, refused: 5 })
    assert.equal(await reserved(a.id), 1950)
    const usage = await call(c.app, 'GET', '/api/v1/usage', { token: a.token })
    assert.equal(usage.body.data.available, 2000, 'reservations are not stored bytes')
  })
})
