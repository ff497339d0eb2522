// Webhooks (issue 26): endpoints made through the API, events recorded with the changes that cause them, and
// delivered to a real HTTP receiver on 127.0.0.1 that verifies every signature with the `standardwebhooks`
// library, as a subscriber would; failed attempts retried with the same `webhook-id`; secrets rotated; targets
// that may not receive webhooks refused. On both engines.
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import type { App } from '../src/app.ts'
import { EVENT_RETENTION_MS, EventsRepository } from '../src/resources/webhooks/events.repository.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  startApp,
  type TestAccount,
} from './support/harness.ts'
import { checkEventAgainstOpenApi } from './support/openapi-check.ts'
import { newRequest, publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import { submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

interface Received {
  headers: IncomingHttpHeaders
  body: string
  path: string
}

/** An HTTP server that records what it receives and answers with the statuses queued, then 204. */
class Receiver {
  readonly received: Received[] = []
  readonly statuses: number[] = []
  /** Paths whose answers wait this many milliseconds. */
  readonly slow = new Map<string, number>()
  /** Paths that answer 302 to this location. */
  readonly redirects = new Map<string, string>()
  #server: Server | undefined
  #waiters: (() => void)[] = []

  async start(): Promise<string> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const path = request.url ?? ''
        setTimeout(() => {
          this.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), path })
          const location = this.redirects.get(path)
          if (location) response.setHeader('location', location)
          response.statusCode = location ? 302 : (this.statuses.shift() ?? 204)
          response.end(response.statusCode >= 400 ? 'receiver says no' : undefined)
          for (const wake of this.#waiters.splice(0)) wake()
        }, this.slow.get(path) ?? 0)
      })
    })
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  /** The requests received at `path`, once there are `count` of them (within `ms`). */
  async at(path: string, count: number, ms = 15_000): Promise<Received[]> {
    const deadline = Date.now() + ms
    for (;;) {
      const matching = this.received.filter((r) => r.path === path)
      if (matching.length >= count) return matching
      const left = deadline - Date.now()
      assert.ok(left > 0, `${count} deliveries to ${path} within ${ms} ms; got ${matching.length}`)
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve)
        setTimeout(resolve, Math.min(left, 200))
      })
    }
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }
}

/**
 * The event a delivery carries, after its signature was verified with `secret`, and its body checked against the
 * `webhooks` of the app's OpenAPI document.
 */
function verified(delivery: Received, secret: string, app: App) {
  const headers = {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature']),
  }
  const event = new Webhook(secret).verify(delivery.body, headers) as {
    type: string
    timestamp: string
    data: any
  }
  checkEventAgainstOpenApi(app, event)
  return event
}

let receiver: Receiver
let receiverBase: string
before(async () => {
  receiver = new Receiver()
  receiverBase = await receiver.start()
})
after(() => receiver.stop())

describeEachEngine(
  'webhooks',
  (ctx) => {
    let account: TestAccount
    let path = 0
    /** A URL of the receiver no other endpoint uses. */
    const newTarget = () => `${receiverBase}/hook-${ctx().engine}-${++path}`

    before(async () => {
      account = await createAccount(ctx().app)
    })

    /** The endpoint's deliveries once `done` holds of them: an attempt is recorded just after its answer. */
    const deliveriesOf = async (endpointId: string, done: (deliveries: any[]) => boolean) => {
      for (let i = 0; ; i++) {
        const res = await call(ctx().app, 'GET', `/api/v1/webhooks/${endpointId}/deliveries`, {
          token: account.token,
        })
        assert.equal(res.status, 200)
        if (done(res.body.data) || i === 100) return res.body.data as any[]
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    /** Every delivery has had `attempts` attempts. */
    const attempted =
      (attempts = 1) =>
      (deliveries: any[]) =>
        deliveries.every((d) => d.attempts.length >= attempts)

    const createEndpoint = async (body: Record<string, unknown>, token = account.token) => {
      const res = await call(ctx().app, 'POST', '/api/v1/webhooks', { token, body })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body.data as { id: string; url: string; secret: string }
    }

    test('an endpoint is made with its secret, shown once; it is listed and read without it', async () => {
      const url = newTarget()
      const made = await createEndpoint({ url, events: ['file.deleted', 'file.created'], description: 'CI' })
      assert.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      assert.deepEqual(
        { ...made, id: undefined, secret: undefined, createdAt: undefined, updatedAt: undefined },
        {
          id: undefined,
          url,
          events: ['file.created', 'file.deleted'],
          description: 'CI',
          isActive: true,
          disabledReason: null,
          failingSince: null,
          secret: undefined,
          createdAt: undefined,
          updatedAt: undefined,
        },
      )
      const read = await call(ctx().app, 'GET', `/api/v1/webhooks/${made.id}`, { token: account.token })
      assert.equal(read.status, 200)
      assert.equal(read.body.data.secret, undefined)
      const list = await call(ctx().app, 'GET', '/api/v1/webhooks', { token: account.token })
      assert.ok(list.body.data.some((endpoint: { id: string }) => endpoint.id === made.id))
      // Another account sees nothing of it.
      const other = await createAccount(ctx().app)
      assertError(
        await call(ctx().app, 'GET', `/api/v1/webhooks/${made.id}`, { token: other.token }),
        404,
        'not_found',
      )
    })

    test('an account has at most 20 endpoints, each with a URL of its own, however many are asked for at once', async () => {
      const owner = await createAccount(ctx().app)
      const urls = Array.from({ length: 25 }, () => newTarget())
      const made = await Promise.all(
        urls.map((url) =>
          call(ctx().app, 'POST', '/api/v1/webhooks', {
            token: owner.token,
            body: { url, events: ['file.created'] },
          }),
        ),
      )
      assert.deepEqual(made.map((res) => res.status).sort(), [...Array(20).fill(201), ...Array(5).fill(409)])
      const refused = made.find((res) => res.status === 409)
      assert.match(
        assertError(refused as never, 409, 'conflict'),
        /has 20 webhook endpoints, the most it may have/,
      )
      const list = await call(ctx().app, 'GET', '/api/v1/webhooks?limit=100', { token: owner.token })
      assert.equal(list.body.data.length, 20)

      const [first, second] = list.body.data as { id: string; url: string }[]
      assert.ok(first && second)
      await call(ctx().app, 'DELETE', `/api/v1/webhooks/${first.id}`, { token: owner.token })
      // A URL the account has an endpoint for already: refused, on creation and on a change.
      const again = await call(ctx().app, 'POST', '/api/v1/webhooks', {
        token: owner.token,
        body: { url: second.url, events: ['file.deleted'] },
      })
      assert.match(assertError(again, 409, 'conflict'), /has a webhook endpoint for .* already/)
      assert.equal(again.body.error.field, 'url')
      const list2 = await call(ctx().app, 'GET', '/api/v1/webhooks?limit=100', { token: owner.token })
      const third = (list2.body.data as { id: string; url: string }[]).find((e) => e.id !== second.id)
      assert.ok(third)
      const moved = await call(ctx().app, 'PATCH', `/api/v1/webhooks/${third.id}`, {
        token: owner.token,
        body: { url: second.url },
      })
      assertError(moved, 409, 'conflict')
      // Its own URL, given again, is no change; another account may use the same URL.
      const same = await call(ctx().app, 'PATCH', `/api/v1/webhooks/${second.id}`, {
        token: owner.token,
        body: { url: second.url, description: 'kept' },
      })
      assert.equal(same.status, 200)
      await createEndpoint(
        { url: second.url, events: ['file.created'] },
        (await createAccount(ctx().app)).token,
      )
      // The room a delete made is one endpoint's.
      await createEndpoint({ url: newTarget(), events: ['file.created'] }, owner.token)
    })

    test('file.created, .trashed, .restored and .deleted arrive signed, with the File of the API, once per endpoint', async () => {
      const url = newTarget()
      const types = ['file.created', 'file.trashed', 'file.restored', 'file.deleted']
      const endpoint = await createEndpoint({ url, events: types })
      const file = await createFile(ctx(), account.id, { name: 'report.pdf', contentType: 'application/pdf' })
      const asApi = (await call(ctx().app, 'GET', `/api/v1/files/${file.id}`, { token: account.token })).body
        .data
      const token = account.token
      const trashed = await call(ctx().app, 'DELETE', `/api/v1/files/${file.id}`, { token })
      assert.equal(trashed.status, 200)
      const [inTrash] = (await call(ctx().app, 'GET', '/api/v1/trash', { token })).body.data
      const restored = await call(ctx().app, 'POST', `/api/v1/trash/${file.id}/restore`, { token })
      assert.deepEqual(restored.body.data, asApi)
      await call(ctx().app, 'DELETE', `/api/v1/files/${file.id}`, { token })
      assert.equal((await call(ctx().app, 'DELETE', `/api/v1/trash/${file.id}`, { token })).status, 200)

      // Deliveries to one endpoint go in parallel, so they may arrive in any order (the README says so).
      const arrived = await receiver.at(new URL(url).pathname, 5)
      const events = arrived.map((delivery) => ({
        delivery,
        event: verified(delivery, endpoint.secret, ctx().app),
      }))
      const ofType = (type: string) => events.filter(({ event }) => event.type === type)
      assert.deepEqual(
        types.map((type) => ofType(type).length),
        [1, 2, 1, 1],
      )
      const [created] = ofType('file.created')
      assert.ok(created)
      assert.deepEqual(created.event.data, asApi)
      for (const { event } of ofType('file.trashed')) {
        assert.deepEqual(Object.keys(event.data).sort(), Object.keys(inTrash).sort())
        assert.deepEqual({ ...event.data, deletedAt: 0, purgeAt: 0 }, { ...asApi, deletedAt: 0, purgeAt: 0 })
        const days = (Date.parse(event.data.purgeAt) - Date.parse(event.data.deletedAt)) / 86_400_000
        assert.equal(days, 30)
      }
      assert.ok(ofType('file.trashed').some(({ event }) => event.data.deletedAt === inTrash.deletedAt))
      assert.deepEqual(ofType('file.restored')[0]?.event.data, asApi)
      assert.deepEqual(ofType('file.deleted')[0]?.event.data, asApi)
      assert.match(created.event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.equal(created.delivery.headers['content-type'], 'application/json')
      assert.match(String(created.delivery.headers['webhook-id']), /^evt_/)
      assert.equal(new Set(arrived.map((delivery) => delivery.headers['webhook-id'])).size, 5)
      // A wrong secret does not verify.
      assert.throws(() =>
        verified(created.delivery, `whsec_${Buffer.alloc(32).toString('base64')}`, ctx().app),
      )

      const deliveries = await deliveriesOf(endpoint.id, attempted())
      assert.deepEqual(
        deliveries.map((d: any) => [d.eventType, d.state, d.attempts.map((a: any) => a.status)]),
        [
          ['file.deleted', 'succeeded', [204]],
          ['file.trashed', 'succeeded', [204]],
          ['file.restored', 'succeeded', [204]],
          ['file.trashed', 'succeeded', [204]],
          ['file.created', 'succeeded', [204]],
        ],
      )
    })

    test('an endpoint gets only the types it asked for, and nothing once disabled', async () => {
      const url = newTarget()
      const endpoint = await createEndpoint({ url, events: ['file.trashed'] })
      const kept = await createFile(ctx(), account.id)
      const removed = await createFile(ctx(), account.id)
      await call(ctx().app, 'DELETE', `/api/v1/files/${removed.id}`, { token: account.token })
      const [only] = await receiver.at(new URL(url).pathname, 1)
      assert.ok(only)
      assert.equal(verified(only, endpoint.secret, ctx().app).data.id, removed.id)

      const disabled = await call(ctx().app, 'PATCH', `/api/v1/webhooks/${endpoint.id}`, {
        token: account.token,
        body: { isActive: false },
      })
      assert.equal(disabled.body.data.isActive, false)
      await call(ctx().app, 'DELETE', `/api/v1/files/${kept.id}`, { token: account.token })
      // The ping of a live endpoint comes after anything recorded before it: by then nothing more arrived.
      const witness = newTarget()
      const live = await createEndpoint({ url: witness, events: ['file.created'] })
      await call(ctx().app, 'POST', `/api/v1/webhooks/${live.id}/ping`, { token: account.token })
      await receiver.at(new URL(witness).pathname, 1)
      assert.equal(receiver.received.filter((r) => r.path === new URL(url).pathname).length, 1)
      assertError(
        await call(ctx().app, 'POST', `/api/v1/webhooks/${endpoint.id}/ping`, { token: account.token }),
        409,
        'conflict',
      )
    })

    test('a failed attempt is tried again with the same webhook-id, and its answer is kept', async () => {
      const url = newTarget()
      const endpoint = await createEndpoint({ url, events: ['file.created'] })
      receiver.statuses.push(500)
      await call(ctx().app, 'POST', `/api/v1/webhooks/${endpoint.id}/ping`, { token: account.token })
      const [first] = await receiver.at(new URL(url).pathname, 1)
      let [delivery] = await deliveriesOf(endpoint.id, attempted(1))
      assert.equal(delivery.state, 'pending')
      assert.deepEqual(
        delivery.attempts.map((a: any) => [a.attempt, a.status, a.response]),
        [[1, 500, 'receiver says no']],
      )
      // The next attempt about 5 s after the first.
      const wait = Date.parse(delivery.nextAttemptAt) - Date.parse(delivery.attempts[0].at)
      assert.equal(wait, 5000)
      const [, second] = await receiver.at(new URL(url).pathname, 2)
      assert.ok(first && second)
      assert.equal(second.headers['webhook-id'], first.headers['webhook-id'])
      assert.equal(verified(second, endpoint.secret, ctx().app).type, 'webhook.ping')
      assert.notEqual(second.headers['webhook-signature'], undefined)

      // Sent again on demand, still as the same message.
      ;[delivery] = await deliveriesOf(endpoint.id, attempted(2))
      assert.equal(delivery.state, 'succeeded')
      const retried = await call(
        ctx().app,
        'POST',
        `/api/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`,
        { token: account.token },
      )
      assert.equal(retried.status, 202)
      const [, , third] = await receiver.at(new URL(url).pathname, 3)
      assert.equal(third?.headers['webhook-id'], first.headers['webhook-id'])
    })

    test('redirects are not followed: to a metadata address or anywhere else, a 302 is a failed attempt', async () => {
      for (const location of [
        'http://169.254.169.254/latest/meta-data/',
        `${receiverBase}/redirected-here`,
      ]) {
        const url = newTarget()
        receiver.redirects.set(new URL(url).pathname, location)
        const endpoint = await createEndpoint({ url, events: ['file.created'] })
        await call(ctx().app, 'POST', `/api/v1/webhooks/${endpoint.id}/ping`, { token: account.token })
        await receiver.at(new URL(url).pathname, 1)
        const [delivery] = await deliveriesOf(endpoint.id, (all) => all.length > 0 && attempted(1)(all))
        assert.equal(delivery.state, 'pending', 'tried again later')
        assert.equal(delivery.attempts[0].status, 302)
      }
      assert.equal(receiver.received.filter((r) => r.path === '/redirected-here').length, 0)
    })

    test('a slow endpoint with a backlog holds up no other', async () => {
      const slowUrl = newTarget()
      receiver.slow.set(new URL(slowUrl).pathname, 1000)
      const slow = await createEndpoint({ url: slowUrl, events: ['file.created'] })
      const quickUrl = newTarget()
      const quick = await createEndpoint({ url: quickUrl, events: ['file.created'] })
      // Forty events for the slow one: four at a time, a second each.
      for (let i = 0; i < 40; i++) {
        await call(ctx().app, 'POST', `/api/v1/webhooks/${slow.id}/ping`, { token: account.token })
      }
      const sent = Date.now()
      await call(ctx().app, 'POST', `/api/v1/webhooks/${quick.id}/ping`, { token: account.token })
      await receiver.at(new URL(quickUrl).pathname, 1)
      const waited = Date.now() - sent
      assert.ok(waited < 3000, `the quick endpoint waited ${waited} ms`)
      assert.ok(receiver.received.filter((r) => r.path === new URL(slowUrl).pathname).length < 40)
      // The backlog is not dropped: the slow endpoint gets every event in the end.
      await receiver.at(new URL(slowUrl).pathname, 40, 30_000)
    })

    test('after a rotation, deliveries are signed by the new secret and, for a day, the old one', async () => {
      const url = newTarget()
      const endpoint = await createEndpoint({ url, events: ['file.created'] })
      const rotated = await call(ctx().app, 'POST', `/api/v1/webhooks/${endpoint.id}/rotate-secret`, {
        token: account.token,
      })
      assert.equal(rotated.status, 200)
      const secret = rotated.body.data.secret as string
      assert.notEqual(secret, endpoint.secret)
      await createFile(ctx(), account.id)
      const [delivery] = await receiver.at(new URL(url).pathname, 1)
      assert.ok(delivery)
      assert.equal(String(delivery.headers['webhook-signature']).split(' ').length, 2)
      assert.equal(verified(delivery, secret, ctx().app).type, 'file.created')
      assert.equal(verified(delivery, endpoint.secret, ctx().app).type, 'file.created')
    })

    test('events past their retention go with their deliveries, unless an attempt is still due', async () => {
      const endpoint = await createEndpoint({ url: newTarget(), events: ['file.created'] })
      const events = new EventsRepository(ctx().db)
      const old = Date.now() - EVENT_RETENTION_MS - 1000
      // Written as they would stand: one delivery ended long ago, one sent again on demand and not yet due (so
      // that the sender leaves both alone).
      const rows = [
        { id: 'evt_old_done', state: 'failed' as const, next: null },
        { id: 'evt_old_due', state: 'pending' as const, next: Date.now() + 3_600_000 },
      ]
      for (const row of rows) {
        await ctx()
          .db.kysely.insertInto('events')
          .values({
            id: row.id,
            account_id: account.id,
            type: 'webhook.ping',
            payload: '{}',
            created_at: old,
          })
          .execute()
        await ctx()
          .db.kysely.insertInto('webhook_deliveries')
          .values({
            id: `dlv_${row.id}`,
            endpoint_id: endpoint.id,
            event_id: row.id,
            state: row.state,
            attempts: 1,
            next_attempt_at: row.next,
            lease_until: null,
            created_at: old,
            updated_at: old,
          })
          .execute()
      }
      assert.ok((await events.purge(Date.now() - EVENT_RETENTION_MS)) >= 1)
      const left = await ctx()
        .db.kysely.selectFrom('webhook_deliveries')
        .select('event_id')
        .where('endpoint_id', '=', endpoint.id)
        .execute()
      assert.deepEqual(
        left.map((row) => row.event_id),
        ['evt_old_due'],
      )
    })

    test('webhooks need their scopes; bad bodies are 400s', async () => {
      const filesOnly = await account.key(['files:read', 'files:write'])
      assertError(
        await call(ctx().app, 'GET', '/api/v1/webhooks', { token: filesOnly }),
        403,
        'insufficient_scope',
      )
      const reader = await account.key(['webhooks:read'])
      assertError(
        await call(ctx().app, 'POST', '/api/v1/webhooks', {
          token: reader,
          body: { url: newTarget(), events: ['file.created'] },
        }),
        403,
        'insufficient_scope',
      )
      for (const body of [
        { url: newTarget(), events: [] },
        { url: newTarget(), events: ['file.renamed'] },
        { url: 'not a url', events: ['file.created'] },
        { url: 'ftp://127.0.0.1/x', events: ['file.created'] },
        { url: 'http://user:pass@127.0.0.1/x', events: ['file.created'] },
        { url: 'https://169.254.169.254/latest/meta-data', events: ['file.created'] },
        { url: newTarget(), events: ['file.created'], extra: true },
      ]) {
        assertError(
          await call(ctx().app, 'POST', '/api/v1/webhooks', { token: account.token, body }),
          400,
          'invalid_request',
        )
      }
    })
  },
  { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } },
)

for (const engine of ENGINES) {
  test(`without WEBHOOKS_ALLOW_PRIVATE, only global unicast addresses, over https:// [${engine}]`, async () => {
    const c = await startApp(engine)
    try {
      const account = await createAccount(c.app)
      for (const url of [
        `${receiverBase}/x`,
        'https://127.0.0.1/x',
        'https://[::1]/x',
        'https://10.1.2.3/x',
        'https://192.168.0.1/x',
        'https://[::ffff:127.0.0.1]/x',
        // Forms that embed an IPv4 address in an IPv6 one, and special IPv6 ranges.
        'https://[::127.0.0.1]/x',
        'https://[::7f00:1]/x',
        'https://[::a01:203]/x',
        'https://[::ffff:0:7f00:1]/x',
        'https://[64:ff9b::7f00:1]/x',
        'https://[2002:7f00:1::1]/x',
        'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x',
        'https://[fe80::1]/x',
        'https://[::]/x',
        'https://[100::1]/x',
        'https://0.0.0.0/x',
        'https://169.254.169.254/x',
        'http://93.184.216.34/x',
        'https://localhost/x',
      ]) {
        const res = await call(c.app, 'POST', '/api/v1/webhooks', {
          token: account.token,
          body: { url, events: ['file.created'] },
        })
        const message = assertError(res, 400, 'invalid_request')
        assert.match(message, /url/, url)
      }
    } finally {
      await c.stop()
    }
  })
}

for (const engine of ENGINES) {
  describe(`webhooks of shares and file requests [${engine}]`, () => {
    let c: ListeningContext
    let account: TestAccount
    let endpoint: { id: string; secret: string }
    const path = `/shares-and-requests-${engine}`
    const events = async (count: number) =>
      (await receiver.at(path, count)).map((delivery) => verified(delivery, endpoint.secret, c.app))

    before(async () => {
      c = await startListening(engine, { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } })
      account = await createAccount(c.app)
      const made = await call(c.app, 'POST', '/api/v1/webhooks', {
        token: account.token,
        body: {
          url: `${receiverBase}${path}`,
          events: ['share.created', 'submission.received', 'request.closed', 'file.created'],
        },
      })
      endpoint = made.body.data
    })
    after(async () => c?.stop())

    test('share.created carries the ShareWithFile of the API; a link already active records nothing', async () => {
      const file = await createFile(c, account.id, { name: 'shared.txt' })
      const before = receiver.received.filter((r) => r.path === path).length
      const made = await call(c.app, 'POST', '/api/v1/shares', {
        token: account.token,
        body: { fileId: file.id },
      })
      assert.equal(made.status, 201)
      await call(c.app, 'POST', '/api/v1/shares', { token: account.token, body: { fileId: file.id } })
      const all = await events(before + 2)
      const shared = all.filter((event) => event.type === 'share.created')
      assert.equal(shared.length, 1)
      const asApi = await call(c.app, 'GET', `/api/v1/shares/${made.body.data.id}`, { token: account.token })
      assert.deepEqual(shared[0]?.data, asApi.body.data)
    })

    test('share.viewed and share.downloaded by the counting rules of the share page, each with its counts', async () => {
      const visitsPath = `${path}-visits`
      const made = await call(c.app, 'POST', '/api/v1/webhooks', {
        token: account.token,
        body: { url: `${receiverBase}${visitsPath}`, events: ['share.viewed', 'share.downloaded'] },
      })
      assert.equal(made.status, 201)
      const file = await createFile(c, account.id, { name: 'visited.txt', content: 'visit me' })
      const shared = await call(c.app, 'POST', '/api/v1/shares', {
        token: account.token,
        body: { fileId: file.id, maxDownloads: 1 },
      })
      const { id: shareId, publicUrl } = shared.body.data
      const page = new URL(publicUrl).pathname
      // Two views (a prefetch and a HEAD count none), one download, and one the limit refuses.
      for (const init of [{}, {}, { headers: { 'sec-purpose': 'prefetch' } }, { method: 'HEAD' }]) {
        assert.equal((await fetch(`${c.base}${page}`, init)).status, 200)
      }
      assert.equal((await fetch(`${c.base}${page}/download`)).status, 200)
      assert.notEqual((await fetch(`${c.base}${page}/download`)).status, 200)
      const received = (await receiver.at(visitsPath, 3)).map((delivery) =>
        verified(delivery, made.body.data.secret, c.app),
      )
      assert.deepEqual(received.map((event) => event.type).sort(), [
        'share.downloaded',
        'share.viewed',
        'share.viewed',
      ])
      const asApi = await call(c.app, 'GET', `/api/v1/shares/${shareId}`, { token: account.token })
      assert.deepEqual(received.find((event) => event.type === 'share.downloaded')?.data, asApi.body.data)
      assert.deepEqual(
        received
          .filter((event) => event.type === 'share.viewed')
          .map((event) => [event.data.id, event.data.viewCount])
          .sort(),
        [
          [shareId, 1],
          [shareId, 2],
        ],
      )
      // Nothing else was on its way (the exhausted link's page counted no view): the next event to arrive is
      // that of a view of another link.
      const other = await createFile(c, account.id, { name: 'witness.txt' })
      const witness = await call(c.app, 'POST', '/api/v1/shares', {
        token: account.token,
        body: { fileId: other.id },
      })
      await fetch(witness.body.data.publicUrl)
      const next = (await receiver.at(visitsPath, 4)).slice(3)
      assert.deepEqual(
        next
          .map((delivery) => verified(delivery, made.body.data.secret, c.app))
          .map((event) => [event.type, event.data.id]),
        [['share.viewed', witness.body.data.id]],
      )
    })

    test('a submission records file.created, submission.received, and request.closed at its file limit', async () => {
      const request = await newRequest(c.app, account.token, { title: 'Two at most' })
      const limits = await call(c.app, 'PUT', `${REQUESTS}/${request.id}/limits`, {
        token: account.token,
        body: { maxFiles: 2 },
      })
      assert.equal(limits.status, 200)
      const publicId = publicIdOf(request)
      const before = receiver.received.filter((r) => r.path === path).length
      const fields = { submitterName: 'Ada', submitterEmail: 'ada@example.com', message: 'Here you go' }
      const sent = await submit(c.app, publicId, fields, [
        { name: 'one.txt', type: 'text/plain', content: 'first' },
        { name: 'two.txt', type: 'text/plain', content: 'second' },
      ])
      assert.deepEqual(
        sent.statuses.map((status) => status.status),
        ['complete', 'complete'],
      )
      // Two files, each with its submission, and the request closed by the second.
      const ofRequest = (await events(before + 5)).slice(before)
      const byType = (type: string) => ofRequest.filter((event) => event.type === type)
      assert.deepEqual(
        byType('file.created')
          .map((event) => event.data.name)
          .sort(),
        ['one.txt', 'two.txt'],
      )
      const received = byType('submission.received')
      assert.deepEqual(received.map((event) => event.data.submission.file.name).sort(), [
        'one.txt',
        'two.txt',
      ])
      const submissions = await call(c.app, 'GET', `${REQUESTS}/${request.id}/submissions`, {
        token: account.token,
      })
      for (const event of received) {
        assert.ok(
          submissions.body.data.some(
            (s: unknown) => JSON.stringify(s) === JSON.stringify(event.data.submission),
          ),
        )
        assert.equal(event.data.request.id, request.id)
      }
      const closed = byType('request.closed')
      assert.equal(closed.length, 1)
      assert.equal(closed[0]?.data.reason, 'maxFiles')
      assert.equal(closed[0]?.data.request.submissionCount, 2)
    })

    test('request.closed when its owner disables it, once', async () => {
      const request = await newRequest(c.app, account.token, { title: 'Closed by hand' })
      const before = receiver.received.filter((r) => r.path === path).length
      for (let i = 0; i < 2; i++) {
        const res = await call(c.app, 'PATCH', `${REQUESTS}/${request.id}`, {
          token: account.token,
          body: { isActive: false },
        })
        assert.equal(res.status, 200)
      }
      await call(c.app, 'PATCH', `${REQUESTS}/${request.id}`, {
        token: account.token,
        body: { title: 'Renamed' },
      })
      const asApi = await call(c.app, 'GET', `${REQUESTS}/${request.id}`, { token: account.token })
      // Recorded after the changes above: once it and one more have arrived, nothing else was on its way.
      await createFile(c, account.id, { name: 'witness.txt' })
      const all = (await events(before + 2)).slice(before)
      assert.equal(all.length, 2)
      const closed = all.filter(
        (event) => event.type === 'request.closed' && event.data.request.id === request.id,
      )
      assert.equal(closed.length, 1)
      assert.equal(closed[0]?.data.reason, 'disabled')
      assert.equal(closed[0]?.data.request.isActive, false)
      assert.equal(closed[0]?.data.request.title, 'Closed by hand')
      assert.equal(asApi.body.data.title, 'Renamed')
    })

    test('request.closed when a deadline passes on an open request, once per deadline', async () => {
      const closedPath = `${path}-closed`
      const made = await call(c.app, 'POST', '/api/v1/webhooks', {
        token: account.token,
        body: { url: `${receiverBase}${closedPath}`, events: ['request.closed'] },
      })
      const withDeadline = async (title: string, inMs: number, maxFiles: number | null = null) => {
        const request = await newRequest(c.app, account.token, { title })
        const res = await call(c.app, 'PUT', `${REQUESTS}/${request.id}/limits`, {
          token: account.token,
          body: { deadline: new Date(Date.now() + inMs).toISOString(), maxFiles },
        })
        assert.equal(res.status, 200, JSON.stringify(res.body))
        return request
      }
      const open = await withDeadline('Open at its deadline', 60_000)
      const disabled = await withDeadline('Disabled before', 60_000)
      const full = await withDeadline('Full before', 60_000, 1)
      const later = await withDeadline('Later deadline', 600_000)
      await call(c.app, 'PATCH', `${REQUESTS}/${disabled.id}`, {
        token: account.token,
        body: { isActive: false },
      })
      const sent = await submit(c.app, publicIdOf(full), { submitterEmail: 'ada@example.com' }, [
        { name: 'a.txt', type: 'text/plain', content: 'a' },
      ])
      assert.equal(sent.statuses[0]?.status, 'complete')
      const { requestDeadlines } = c.app.jobs
      // As if 90 seconds had gone by: three deadlines passed, one of an open request. Twice: handled once.
      await requestDeadlines.handlePassed(Date.now() + 90_000)
      await requestDeadlines.handlePassed(Date.now() + 90_000)
      // A new deadline for the same request: its passing is an event again.
      const renewed = await call(c.app, 'PUT', `${REQUESTS}/${open.id}/limits`, {
        token: account.token,
        body: { deadline: new Date(Date.now() + 60_000).toISOString() },
      })
      assert.equal(renewed.status, 200)
      await requestDeadlines.handlePassed(Date.now() + 90_000)
      const received = (await receiver.at(closedPath, 4)).map((delivery) =>
        verified(delivery, made.body.data.secret, c.app),
      )
      const reasons = (id: string) =>
        received.filter((event) => event.data.request.id === id).map((event) => event.data.reason)
      assert.deepEqual(reasons(open.id), ['deadline', 'deadline'])
      assert.deepEqual(reasons(disabled.id), ['disabled'])
      assert.deepEqual(reasons(full.id), ['maxFiles'])
      assert.deepEqual(reasons(later.id), [])
      const first = received.find((event) => event.data.reason === 'deadline')
      assert.equal(first?.data.request.title, 'Open at its deadline')
    })
  })
}
