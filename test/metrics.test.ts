// GET /metrics (issue 24): off unless asked for; with METRICS_TOKEN on the main port for its bearer only, with
// METRICS_PORT on a listener of its own; and what it counts, read back after real traffic over real HTTP: a
// multipart upload with the @vercel/blob client, downloads (one abandoned half way), an unknown path, the
// blob store's operations, the jobs' runs and, on PostgreSQL, the pool. On both engines.
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { assertError, call, createAccount, ENGINES, startApp, type TestAccount } from './support/harness.ts'
import {
  freePort,
  type ListeningContext,
  prepareUploads,
  seededStream,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

const TOKEN = 'metrics-token-of-at-least-32-characters'

/** The value of the series `name{labels}` in the exposition `text`, or undefined when it is not there. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    )
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3])
  }
  return undefined
}

/** The sum of every series of `name` whose labels include `labels`. */
function total(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    if (Object.entries(labels).every(([key, value]) => (match[2] ?? '').includes(`${key}="${value}"`))) {
      sum += Number(match[3])
    }
  }
  return sum
}

test('no /metrics unless METRICS_PORT or METRICS_TOKEN is set', async () => {
  const ctx = await startApp('sqlite')
  try {
    assertError(await call(ctx.app, 'GET', '/metrics'), 404, 'not_found')
  } finally {
    await ctx.stop()
  }
})

for (const engine of ENGINES) {
  describe(`metrics [${engine}]`, () => {
    let ctx: ListeningContext
    let account: TestAccount
    let metricsPort: number

    before(async () => {
      metricsPort = await freePort()
      ctx = await startListening(engine, {
        env: { METRICS_TOKEN: TOKEN, METRICS_PORT: String(metricsPort) },
      })
      account = await createAccount(ctx.app)
    })
    after(async () => ctx?.stop())

    const scrape = async () => {
      const response = await fetch(`${ctx.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
      return response.text()
    }

    test('the main port serves them to the bearer of METRICS_TOKEN only', async () => {
      for (const authorization of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, account.token]) {
        const response = await call(ctx.app, 'GET', '/metrics', {
          headers: authorization ? { authorization } : {},
        })
        assertError(response, 401, 'unauthorized')
        assert.equal(response.headers['www-authenticate'], 'Bearer realm="metrics"')
        assert.ok(!response.raw.body.includes(TOKEN))
      }
      const text = await scrape()
      assert.ok(sample(text, 'process_cpu_user_seconds_total') !== undefined, 'Node’s own figures')
    })

    test('METRICS_PORT serves them on a listener of its own, and nothing else', async () => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      assert.equal(response.status, 200)
      assert.match(await response.text(), /^# HELP coffer_http_request_duration_seconds /m)
      const other = await fetch(`http://127.0.0.1:${metricsPort}/api/v1/files`)
      assert.equal(other.status, 404)
    })

    test('requests by route and status, bytes by route, blob operations and uploads in flight', async () => {
      const size = 10 * 1024 * 1024 + 5
      process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
      const [grant] = await prepareUploads(ctx.base, account.token, [
        { name: 'counted.bin', type: 'application/octet-stream', size },
      ])
      assert.ok(grant)
      await uploadWithGrant(grant, seededStream(size), { multipart: true })
      const status = await waitForUpload(grant, account.token)
      assert.equal(status.status, 'complete')
      const fileId = (status as { result: { id: string } }).result.id

      const download = await fetch(`${ctx.base}/api/v1/files/${fileId}/download`, {
        headers: { authorization: `Bearer ${account.token}` },
      })
      assert.equal((await download.arrayBuffer()).byteLength, size)
      // A download the client abandons after its first bytes.
      await new Promise<void>((resolve, reject) => {
        const abandoned = httpRequest(`${ctx.base}/api/v1/files/${fileId}/download`, {
          headers: { authorization: `Bearer ${account.token}` },
        })
        abandoned.on('response', (response) => {
          response.once('data', () => {
            abandoned.destroy()
            resolve()
          })
        })
        abandoned.on('error', reject)
        abandoned.end()
      })
      await fetch(`${ctx.base}/no/such/path`)
      await new Promise((resolve) => setTimeout(resolve, 200))

      const text = await scrape()
      const downloadRoute = { method: 'GET', route: '/api/v1/files/:fileId/download' }
      assert.equal(
        sample(text, 'coffer_http_request_duration_seconds_count', { ...downloadRoute, status: '200' }),
        1,
      )
      assert.equal(
        sample(text, 'coffer_http_request_duration_seconds_count', { ...downloadRoute, status: 'aborted' }),
        1,
      )
      assert.equal(
        sample(text, 'coffer_http_request_duration_seconds_count', { route: 'unmatched', status: '404' }),
        1,
      )
      assert.equal(
        sample(text, 'coffer_http_request_duration_seconds_count', {
          method: 'POST',
          route: '/api/v1/files',
          status: '201',
        }),
        1,
      )
      // The blob endpoint had the intent adopt the blob in-process: no request went to a completion callback.
      assert.deepEqual(
        text.split('\n').filter((line) => line.includes('uploads/completed')),
        [],
      )
      // The upload's bytes came in through the blob endpoint; the download's went out through its route.
      const uploaded = total(text, 'coffer_http_received_bytes_total', { route: '/blob/mpu' })
      assert.ok(uploaded >= size && uploaded < size + 64 * 1024, `${uploaded}`)
      const downloaded = sample(text, 'coffer_http_sent_bytes_total', { route: downloadRoute.route }) ?? 0
      assert.ok(downloaded > size && downloaded < 2 * size, `${downloaded}`)
      assert.equal(sample(text, 'coffer_uploads_in_flight'), 0)
      // Two parts (the client sends 8 MiB ones), one completion, and the blob read by processing and downloads.
      const ok = (operation: string) =>
        sample(text, 'coffer_blob_operation_duration_seconds_count', { operation, outcome: 'ok' }) ?? 0
      assert.equal(ok('write_part'), 2)
      assert.equal(ok('complete_multipart'), 1)
      assert.ok(ok('get') >= 2, `${ok('get')}`)
    })

    test('background jobs by run, and the database pool on PostgreSQL', async () => {
      const text = await scrape()
      // The expired-records purge runs at start.
      assert.equal(sample(text, 'coffer_job_runs_total', { job: 'expired-records', outcome: 'ran' }), 1)
      assert.equal(sample(text, 'coffer_job_duration_seconds_count', { job: 'expired-records' }), 1)
      const open = sample(text, 'coffer_db_pool_connections', { state: 'open' })
      if (engine === 'postgres') {
        assert.ok(open !== undefined && open >= 1 && open <= 4, `${open}`)
        assert.equal(sample(text, 'coffer_db_pool_waiting_queries'), 0)
      } else {
        assert.equal(open, undefined, 'SQLite has no pool')
      }
    })
  })
}
