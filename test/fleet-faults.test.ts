// A fleet that survives its dependencies (issue 40): two Coffer processes behind the README's nginx
// configuration (examples/nginx-fleet.conf), on a PostgreSQL cluster, a Redis and a Ceph gateway of the test's
// own, under a mixed load of real clients: uploads with the @vercel/blob client (single PUTs and multipart),
// downloads, share views and downloads, listings and deletes. Each dependency is broken in turn while the load
// runs: PostgreSQL stopped as a crash would (`pg_ctl stop -m immediate`) and started again, the object store's
// gateway killed and started again, then frozen (SIGSTOP) and thawed, Redis killed and started again.
//
// After each fault: no process exited; while the dependency was down, what needed it was answered 503 (never a
// 500 or a 502) and no request waited much past the configured timeouts, and what did not need it was served;
// every upload caught by the fault either completed or was refused with an error the client can act on, and
// sent again once the dependency is back it completes. At the end: every acknowledged upload downloads
// byte-identical, every acknowledged delete stuck, the share link counted exactly the views and downloads its
// visitors were answered, and the storage check finds nothing stray and nothing missing. The figures of each
// fault (requests by status, the longest wait, the time to recover) are printed.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { type Ceph, cephMissing, startCeph } from './support/ceph.ts'
import { cli, newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { type Nginx, nginxMissing, startFleetNginx } from './support/nginx.ts'
import { freePort } from './support/ports.ts'
import { clusterMissing, type PostgresCluster, startPostgresCluster } from './support/postgres-cluster.ts'
import { type RedisServer, redisServerMissing, startRedisServer } from './support/redis-server.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { type Grant, handshakeToken, uploadWithGrant } from './support/uploads.ts'

/** S3_TIMEOUT_SECONDS of the processes: how long a request to a store that stopped answering may wait. */
const S3_TIMEOUT_SECONDS = 2
/**
 * The longest any request may take while a dependency is down: two attempts at the object store of
 * S3_TIMEOUT_SECONDS each (the SDK's one retry), with the SDK's backoff and the time to serve the rest on a
 * machine that runs another test file beside this one. Without the timeouts a frozen store held requests 20 s
 * and more.
 */
const LONGEST_WAIT_MS = 2 * S3_TIMEOUT_SECONDS * 1000 + 4000
/** How long each dependency stays down. */
const DOWN_MS = 6000
const MiB = 1024 * 1024

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One request of the load, as its client saw it. */
interface Outcome {
  kind: 'list' | 'download' | 'view' | 'share-download' | 'delete' | 'prepare' | 'upload' | 'status'
  /**
   * The HTTP status; `network` for a request that got no answer, `cut` for one whose body broke off, `refused`
   * for an upload() the @vercel/blob client gave up with an error.
   */
  status: number | 'network' | 'cut' | 'refused'
  startedAt: number
  ms: number
}

/** An upload the load began; `done` once its file is stored. */
interface Upload {
  content: Buffer
  grant: Grant | undefined
  fileId: string | undefined
  /** What its client was told when it did not complete, to be acted on once the dependency is back. */
  failure: string | undefined
}

const skip = clusterMissing || cephMissing || nginxMissing || redisServerMissing

describe('a fleet whose dependencies fail', { skip }, () => {
  let cluster: PostgresCluster
  let redis: RedisServer
  let ceph: Ceph
  let nginx: Nginx
  let base: string
  let token: string
  let storage: Storage
  const servers: ServerProcess[] = []
  const dataDirs: string[] = []
  /** Acknowledged uploads: file id → SHA-256 of what was sent. */
  const stored = new Map<string, string>()
  /** Files the load may delete, and those whose delete was acknowledged. */
  const doomed: string[] = []
  const deleted = new Set<string>()
  /** The share link the visitors use, and how many of its views and downloads were answered 200. */
  let share: { id: string; page: string }
  let views = 0
  let shareDownloads = 0

  before(async () => {
    ;[cluster, redis, ceph] = await Promise.all([startPostgresCluster(), startRedisServer(), startCeph()])
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    await admin.query('create database coffer')
    await admin.end()
    const databaseUrl = cluster.url.replace(/\/postgres$/, '/coffer')
    await ceph.createBucket('fleet')
    const blobEnv = ceph.env('fleet', 'coffer')
    for (let i = 0; i < 2; i++) dataDirs.push(await mkdtemp(path.join(tmpdir(), 'coffer-faults-')))
    storage = { dataDir: dataDirs[0] as string, databaseUrl, blobEnv }
    const ports = await Promise.all([freePort(), freePort(), freePort()])
    base = `http://127.0.0.1:${ports[2]}`
    const account = await newAccount(storage)
    token = (await newKey(storage, account.email, 'all')).key
    for (const [i, dataDir] of dataDirs.entries()) {
      const env = {
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        REDIS_URL: redis.url,
        ...blobEnv,
        PUBLIC_URL: base,
        TRUST_PROXY: 'true',
        RATE_LIMIT_MAX: '100000',
        S3_TIMEOUT_SECONDS: String(S3_TIMEOUT_SECONDS),
      }
      servers.push(await startServer(env, ports[i]))
    }
    nginx = await startFleetNginx({
      upstreams: ports.slice(0, 2).map((port) => `127.0.0.1:${port}`),
      port: ports[2] as number,
    })
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`

    // What the load reads and deletes, stored before any fault.
    for (let i = 0; i < 30; i++) {
      const upload = newUpload(64 * 1024 + i)
      await sendUpload(upload, () => {})
      assert.ok(upload.fileId, upload.failure)
      if (i < 10) stored.set(upload.fileId, sha256(upload.content))
      else doomed.push(upload.fileId)
    }
    const [first] = stored.keys()
    const made = await api('POST', '/api/v1/shares', { fileId: first })
    assert.equal(made.status, 201)
    const { id, publicUrl } = (await made.json()).data
    share = { id, page: new URL(publicUrl).pathname }
  })

  after(async () => {
    await nginx?.stop()
    await Promise.all(servers.map((server) => server.stop()))
    await Promise.all([cluster?.destroy(), redis?.stop(), ceph?.stop()])
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  const api = (method: string, target: string, body?: unknown) =>
    fetch(`${base}${target}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  const newUpload = (size: number): Upload => ({
    content: randomBytes(size),
    grant: undefined,
    fileId: undefined,
    failure: undefined,
  })

  /**
   * Sends an upload as a client does: prepares it (unless it holds a grant still good), sends the bytes with
   * the @vercel/blob client, and follows its status until it is no longer pending, waiting out a 503 as its
   * Retry-After says. What fails is left in `upload.failure`, for the client to act on later.
   */
  async function sendUpload(upload: Upload, record: (outcome: Outcome) => void): Promise<void> {
    upload.failure = undefined
    const timed = async (kind: Outcome['kind'], request: () => Promise<Response>) => {
      const startedAt = Date.now()
      try {
        const response = await request()
        record({ kind, status: response.status, startedAt, ms: Date.now() - startedAt })
        return response
      } catch (error) {
        record({ kind, status: 'network', startedAt, ms: Date.now() - startedAt })
        throw error
      }
    }
    if (!upload.grant) {
      const prepared = await timed('prepare', () =>
        api('POST', '/api/v1/files', {
          files: [{ name: 'fault.bin', type: 'application/octet-stream', size: upload.content.length }],
        }),
      )
      const body = await prepared.json()
      if (prepared.status !== 201) {
        upload.failure = `prepare: ${prepared.status} ${JSON.stringify(body)}`
        return
      }
      upload.grant = body.data.uploads[0] as Grant
    }
    const grant = upload.grant as Grant
    const startedAt = Date.now()
    try {
      await uploadWithGrant(grant, upload.content)
      record({ kind: 'upload', status: 200, startedAt, ms: Date.now() - startedAt })
    } catch (error) {
      record({ kind: 'upload', status: 'refused', startedAt, ms: Date.now() - startedAt })
      upload.failure = `upload: ${(error as Error).message}`
      return
    }
    for (const deadline = Date.now() + 90_000; Date.now() < deadline; ) {
      const response = await timed('status', () => api('GET', new URL(grant.statusUrl).pathname)).catch(
        () => undefined,
      )
      if (response?.status === 503) {
        // Asked again sooner than Retry-After says, as the test's outages are short.
        await response.arrayBuffer()
        await sleep(Number(response.headers.get('retry-after') ?? 1) * 100)
        continue
      }
      if (response?.status !== 200) {
        await response?.arrayBuffer()
        await sleep(200)
        continue
      }
      const { data } = await response.json()
      if (data.status === 'complete') {
        upload.fileId = data.result.id
        return
      }
      if (data.status === 'error') {
        // A refusal: the client prepares the upload again.
        upload.failure = `status: ${data.error}`
        upload.grant = undefined
        return
      }
      await sleep(50)
    }
    upload.failure = 'status: still pending after 90 s'
  }

  /**
   * GETs `target` and reads its whole body; `onAnswer` hears the status as soon as it arrives (what counts a
   * view or a download), and a download's body is checked against what was uploaded.
   */
  async function get(
    kind: Outcome['kind'],
    target: string,
    headers: Record<string, string>,
    record: (outcome: Outcome) => void,
    onAnswer?: (status: number, body: Buffer) => void,
  ): Promise<void> {
    const startedAt = Date.now()
    let response: Response
    try {
      response = await fetch(`${base}${target}`, { headers })
    } catch {
      record({ kind, status: 'network', startedAt, ms: Date.now() - startedAt })
      return
    }
    onAnswer?.(response.status, Buffer.alloc(0))
    try {
      const body = Buffer.from(await response.arrayBuffer())
      record({ kind, status: response.status, startedAt, ms: Date.now() - startedAt })
      if (response.status === 200 && kind === 'download') {
        const fileId = target.split('/')[4] as string
        assert.equal(sha256(body), stored.get(fileId), `the bytes of ${fileId}`)
      }
    } catch {
      record({ kind, status: 'cut', startedAt, ms: Date.now() - startedAt })
    }
  }

  /**
   * Runs the load until `stop` resolves, then until every request under way has ended: what each client
   * saw, and the uploads it began.
   */
  async function load(stop: Promise<void>): Promise<{ outcomes: Outcome[]; uploads: Upload[] }> {
    const outcomes: Outcome[] = []
    const record = (outcome: Outcome) => outcomes.push(outcome)
    const uploads: Upload[] = []
    let running = true
    void stop.then(() => {
      running = false
    })
    const auth = { authorization: `Bearer ${token}` }
    const pick = () => [...stored.keys()][Math.floor(Math.random() * stored.size)] as string
    const loop = async (pause: number, step: (i: number) => Promise<void>) => {
      for (let i = 0; running; i++) {
        await step(i)
        await sleep(pause)
      }
    }
    await Promise.all([
      loop(20, () => get('list', '/api/v1/files?limit=5', auth, record)),
      loop(20, () => get('download', `/api/v1/files/${pick()}/download`, auth, record)),
      loop(20, () =>
        get('view', share.page, { accept: 'text/html' }, record, (s) => {
          if (s === 200) views++
        }),
      ),
      loop(40, () =>
        get('share-download', `${share.page}/download`, {}, record, (s) => {
          if (s === 200) shareDownloads++
        }),
      ),
      loop(300, async () => {
        const fileId = doomed.shift()
        if (!fileId) return
        const startedAt = Date.now()
        const response = await api('DELETE', `/api/v1/files/${fileId}`).catch(() => undefined)
        await response?.arrayBuffer()
        record({
          kind: 'delete',
          status: response?.status ?? 'network',
          startedAt,
          ms: Date.now() - startedAt,
        })
        if (response?.status === 200) deleted.add(fileId)
        // Refused (or unanswered): sent again later; one that finds the file gone was done by an earlier try.
        else if (response?.status === 404) deleted.add(fileId)
        else doomed.push(fileId)
      }),
      // Two uploaders: small files in one PUT, and files of two parts. One refused waits a second, as a client
      // told to retry later does, before it begins another.
      ...[64 * 1024, 6 * MiB].map((size) =>
        loop(100, async (i) => {
          const upload = newUpload(size + i)
          uploads.push(upload)
          await sendUpload(upload, record)
          if (upload.fileId) stored.set(upload.fileId, sha256(upload.content))
          else await sleep(1000)
        }),
      ),
    ])
    return { outcomes, uploads }
  }

  /** Requests by kind and status, as `kind: status × count, …`. */
  const tally = (outcomes: Outcome[]) => {
    const counts = new Map<string, number>()
    for (const { kind, status } of outcomes)
      counts.set(`${kind} ${status}`, (counts.get(`${kind} ${status}`) ?? 0) + 1)
    return [...counts]
      .sort()
      .map(([key, n]) => `${key} ×${n}`)
      .join(', ')
  }

  /** nginx's log of the requests it answered, after its first `count` lines. */
  const served = async (count: number) =>
    (await nginx.requests())
      .split('\n')
      .filter(Boolean)
      .slice(count)
      .map((line) => {
        const [method = '', uri = '', status = '', seconds = ''] = line.split(' ')
        return { method, uri, status: Number(status), seconds: Number(seconds) }
      })

  /**
   * Breaks a dependency under load for DOWN_MS, repairs it, lets the load run on until it recovers, and checks
   * what the clients saw; then finishes what the fault interrupted as a client would. `needs` says which
   * requests need the dependency: they must have been refused with 503 while it was down.
   */
  async function underFault(fault: {
    name: string
    break(): Promise<void>
    repair(): Promise<void>
    needs: Outcome['kind'][]
    /** Checks made while the dependency is down, beside the load. */
    whileDown?: () => Promise<void>
    /** How long it stays down; DOWN_MS unless said. */
    downMs?: number
  }) {
    const logged = (await nginx.requests()).split('\n').filter(Boolean).length
    let stop: () => void = () => {}
    const stopped = new Promise<void>((resolve) => {
      stop = resolve
    })
    const running = load(stopped)
    await sleep(1500)
    const brokenAt = Date.now()
    await fault.break()
    await Promise.all([sleep(fault.downMs ?? DOWN_MS), fault.whileDown?.()])
    const repairingAt = Date.now()
    await fault.repair()
    const repairedAt = Date.now()
    await sleep(5000)
    stop()
    const { outcomes, uploads } = await running

    for (const [i, server] of servers.entries()) {
      assert.equal(server.child.exitCode, null, `process ${i} exited during the ${fault.name} fault`)
      assert.equal(server.child.signalCode, null, `process ${i} was killed during the ${fault.name} fault`)
    }
    // What was under way while it was down: begun before the repair, and answered after the break.
    const down = outcomes.filter((o) => o.startedAt < repairingAt && o.startedAt + o.ms > brokenAt)
    // Nothing a client got was a 500 or a 502: a dependency's fault is a 503, which clients retry.
    const faults = outcomes.filter((o) => o.status === 500 || o.status === 502)
    assert.deepEqual(faults, [], `${fault.name}: ${tally(outcomes)}`)
    const lines = await served(logged)
    const serverFaults = lines.filter((line) => line.status >= 500 && line.status !== 503)
    assert.deepEqual(serverFaults, [], `${fault.name}: nginx logged server faults\n${await nginx.errors()}`)
    // What needs the dependency was refused while it was down (the fault was real), with 503 and nothing else
    // of the server's; what does not need it was served.
    for (const kind of fault.needs) {
      assert.ok(
        down.some((o) => o.kind === kind && o.status === 503),
        `${fault.name}: no ${kind} was refused with 503 while it was down: ${tally(down)}`,
      )
    }
    const slowest = lines.reduce((a, b) => (b.seconds > a.seconds ? b : a), lines[0] ?? { seconds: 0 })
    const longest = slowest.seconds * 1000
    assert.ok(
      longest <= LONGEST_WAIT_MS,
      `${fault.name}: a request took ${longest} ms: ${JSON.stringify(slowest)}`,
    )
    // Recovered: the first answer of each kind that needs the dependency after the repair.
    const recovered = (kind: Outcome['kind']) =>
      Math.min(
        ...outcomes
          .filter((o) => o.kind === kind && Number(o.status) < 300 && o.startedAt >= repairedAt)
          .map((o) => o.startedAt + o.ms - repairedAt),
      )
    const recovery = Math.max(0, ...fault.needs.map(recovered))
    assert.ok(
      Number.isFinite(recovery),
      `${fault.name}: the load did not recover: ${tally(outcomes.filter((o) => o.startedAt >= repairedAt))}`,
    )

    // Uploads the fault interrupted: each was refused with an error its client can act on, and sent again
    // (with its grant, or prepared again if the grant was refused) it completes.
    const interrupted = uploads.filter((upload) => upload.failure !== undefined)
    const told = [...new Set(interrupted.map((upload) => upload.failure?.slice(0, 160)))]
    for (let i = 0; i < interrupted.length; i += 4) {
      await Promise.all(
        interrupted.slice(i, i + 4).map(async (upload) => {
          await sendUpload(upload, () => {})
          assert.equal(upload.failure, undefined, `${fault.name}: an interrupted upload sent again`)
          stored.set(upload.fileId as string, sha256(upload.content))
        }),
      )
    }
    console.log(
      `# ${fault.name}: down ${repairingAt - brokenAt} ms, repaired in ${repairedAt - repairingAt} ms, ` +
        `requests recovered ${recovery} ms after; longest request ${longest} ms; ` +
        `${uploads.length} uploads, ${interrupted.length} interrupted and sent again\n` +
        `#   the interrupted were told: ${told.join(' | ') || '-'}\n` +
        `#   while down: ${tally(down)}\n#   in all: ${tally(outcomes)}`,
    )
  }

  /** A refusal of the API while `what` is down: 503 in the envelope, naming it (not its address), Retry-After. */
  async function refusedFor(response: Response, what: string) {
    assert.equal(response.status, 503)
    assert.equal(response.headers.get('retry-after'), '5')
    assert.deepEqual(await response.json(), {
      error: {
        code: 'unavailable',
        message: `The request could not be served: ${what} is unavailable right now.`,
        hint: 'The service is starting or a dependency is down; retry shortly.',
      },
    })
  }

  test('PostgreSQL stopped as a crash would, then started again: no process exits, 503s, nothing lost', async () => {
    // A client token handed out before the database went away, for a blob request while it is away.
    const [grant] = (
      await (
        await api('POST', '/api/v1/files', {
          files: [{ name: 'token.bin', type: 'application/octet-stream', size: 3 }],
        })
      ).json()
    ).data.uploads as Grant[]
    const clientToken = await handshakeToken(grant as Grant)
    await underFault({
      name: 'PostgreSQL crash',
      break: () => cluster.crash(),
      repair: () => cluster.start(),
      needs: ['list', 'download', 'view', 'delete'],
      whileDown: async () => {
        await sleep(500)
        await refusedFor(await api('GET', '/api/v1/folders'), 'the database')
        const page = await fetch(`${base}${share.page}`, { headers: { accept: 'text/html' } })
        assert.equal(page.status, 503)
        assert.equal(page.headers.get('retry-after'), '5')
        assert.match(await page.text(), /<h1 id="notice-title">Temporarily unavailable<\/h1>/)
        // The blob endpoint answers in the @vercel/blob client's terms: a code it retries.
        const blob = await fetch(`${base}/blob/?pathname=${encodeURIComponent((grant as Grant).pathname)}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${clientToken}`, 'x-vercel-blob-access': 'private' },
          body: 'abc',
        })
        assert.equal(blob.status, 503)
        assert.equal(blob.headers.get('retry-after'), '5')
        assert.equal((await blob.json()).error.code, 'service_unavailable')
      },
    })
  })

  test('the object store killed, then started again: what needs it is 503, the rest is served', async () => {
    await underFault({
      name: 'object store killed',
      break: () => ceph.gateway.kill(),
      repair: () => ceph.gateway.start(),
      needs: ['download', 'share-download'],
      whileDown: async () => {
        await sleep(500)
        const [fileId] = stored.keys()
        await refusedFor(await api('GET', `/api/v1/files/${fileId}/download`), 'file storage')
        // Readiness says so, for a load balancer that polls it.
        for (const server of servers) assert.equal((await fetch(`${server.base}/readyz`)).status, 503)
      },
    })
  })

  test('the object store frozen, then thawed: no request waits past its timeouts', async () => {
    await underFault({
      name: 'object store frozen',
      break: () => ceph.gateway.freeze(),
      repair: () => ceph.gateway.thaw(),
      needs: ['download', 'share-download'],
      // Each request that meets it waits out two timeouts (about 4 s): long enough for every kind to meet it
      // whole at least once, the first of each having perhaps begun just before.
      downMs: 10_000,
    })
  })

  test('Redis killed, then started again: nothing a client sees', async () => {
    await underFault({
      name: 'Redis killed',
      break: () => redis.kill(),
      repair: () => redis.start(),
      needs: [],
    })
  })

  test('after every fault: nothing lost, every delete stuck, counts exact, nothing stray in the store', async () => {
    for (const [fileId, digest] of stored) {
      const response = await api('GET', `/api/v1/files/${fileId}/download`)
      assert.equal(response.status, 200, fileId)
      assert.equal(sha256(Buffer.from(await response.arrayBuffer())), digest, fileId)
    }
    for (const fileId of deleted) {
      const response = await api('GET', `/api/v1/files/${fileId}`)
      await response.arrayBuffer()
      assert.equal(response.status, 404, fileId)
    }
    const counted = (await (await api('GET', `/api/v1/shares/${share.id}`)).json()).data
    assert.deepEqual(
      { views: counted.viewCount, downloads: counted.downloadCount },
      { views, downloads: shareDownloads },
    )
    // Every process's readiness probe once more: one whose removal failed during a fault removes it now.
    for (const server of servers) assert.equal((await fetch(`${server.base}/readyz`)).status, 200)
    const run = await cli(storage, ['storage', 'check', '--json'])
    assert.equal(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.deepEqual(
      {
        problems: report.problems,
        missing: report.missingBlobs.count,
        orphans: report.orphanBlobs.count,
        strayProbes: report.strayProbes.count,
        unrecognised: report.unrecognised.count,
      },
      { problems: 0, missing: 0, orphans: 0, strayProbes: 0, unrecognised: 0 },
    )
    console.log(
      `# after the faults: ${stored.size} files byte-identical, ${deleted.size} deletes, ` +
        `${views} views and ${shareDownloads} downloads counted; the store holds ${report.blobs.count} objects`,
    )
  })
})
