// Coffer as a fleet (issue 24): three server processes, each with a DATA_DIR of its own, on one PostgreSQL
// database, one Redis and one bucket of Ceph's object store, behind nginx round-robin with no sticky sessions
// (examples/nginx-fleet.conf), driven through nginx only. Uploads with the real @vercel/blob client whose parts
// reach different processes, downloads and previews from every process, share views and downloads counted
// exactly across them, a web session and its CSRF tokens used on other processes than the one that made them,
// an OAuth client authorized on one process, given tokens by another and refreshing them on a third, rate
// limits and sign-in lockouts that hold across processes, and one process killed in the middle of uploads and
// deletes while clients go on through the others; then the storage check finds nothing to repair and nothing
// missing. nginx's access log says which process served each request.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import * as oauth from 'oauth4webapi'
import { openDatabase } from '../src/platform/db/open.ts'
import { browserMissing, launchBrowser, newContext } from './support/browser.ts'
import { cli, newAccount, newEmail, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { requestFrom } from './support/local-address.ts'
import { type Nginx, nginxMissing, startFleetNginx } from './support/nginx.ts'
import {
  apiStatus,
  authorizationUrl,
  consent,
  exchange,
  followInBrowser,
  INSECURE,
  register,
  signInIfAsked,
  tokenError,
} from './support/oauth.ts'
import { freePort } from './support/ports.ts'
import { blobStorageFor, s3Missing } from './support/s3.ts'
import { samplePng } from './support/sample-files.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { type Grant, prepareUploads, uploadWithGrant, waitForUpload } from './support/uploads.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')
const PASSWORD = 'a long enough password'
/** Requests per minute per credential (or address): low enough to reach in a test, high enough for the rest. */
const RATE_LIMIT_MAX = 1000

/** A request as nginx logged it, with the process that answered it (the last one it tried). */
interface Served {
  method: string
  uri: string
  status: number
  upstream: string
}

/**
 * A client address of its own for each anonymous visitor: a local address it connects from (nginx passes on the
 * address it sees, whatever a client puts in X-Forwarded-For).
 */
let visitors = 0
/**
 * The network of this run's visitors: the limits per address live in the machine's Redis, for an hour, beyond the
 * run; a run of its own must not meet the counts of an earlier one.
 */
const VISITORS_NET = 100 + Math.floor(Math.random() * 150)
const visitorAddress = () => {
  visitors++
  return `127.${VISITORS_NET}.${visitors >> 8}.${visitors & 255}`
}

/** A browser's cookie jar and forms: each request goes through nginx, to whichever process, from its address. */
class FormClient {
  readonly #cookies = new Map<string, string>()
  readonly #base: string
  readonly address = visitorAddress()

  constructor(base: string) {
    this.#base = base
  }

  /** `headers` are sent too: an X-Forwarded-For that names another client, say. */
  async send(
    method: 'GET' | 'POST',
    path: string,
    form?: Record<string, string>,
    headers: Record<string, string> = {},
  ) {
    const response = await requestFrom(this.address, `${this.#base}${path}`, {
      method,
      headers: {
        accept: 'text/html',
        cookie: [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded', origin: this.#base } : {}),
        ...headers,
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    })
    for (const header of response.headers['set-cookie'] ?? []) {
      const [name, value] = (header.split(';')[0] ?? '').split('=')
      if (!name) continue
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(header)) this.#cookies.delete(name)
      else this.#cookies.set(name, value ?? '')
    }
    const location = response.headers.location
    return { status: response.status, location: location ?? null, text: response.text }
  }

  /** The CSRF token of the first form of `page`'s HTML. */
  static csrfOf(page: { text: string }): string {
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1]
    assert.ok(token, 'the page has a form with a CSRF token')
    return token
  }
}

const skip = !ENGINES.includes('postgres')
  ? 'TEST_DATABASE_URL is not set: a fleet needs PostgreSQL'
  : s3Missing || nginxMissing

describe('three processes behind nginx', { skip }, () => {
  let storage: Storage
  let cleanup: () => Promise<void>
  let nginx: Nginx
  let base: string
  let token: string
  const servers: (ServerProcess | undefined)[] = []
  let env: (dataDir: string) => Record<string, string>
  let upstreams: string[]

  before(async () => {
    const dataDirs = await Promise.all([0, 1, 2].map(() => mkdtemp(path.join(tmpdir(), 'coffer-fleet-'))))
    const database = await freshDatabase('postgres', dataDirs[0] as string)
    const blobs = await blobStorageFor('postgres')
    storage = { dataDir: dataDirs[0] as string, databaseUrl: database.url, blobEnv: blobs.env }
    const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()])
    const nginxPort = ports[3] as number
    base = `http://127.0.0.1:${nginxPort}`
    env = (dataDir: string) => ({
      DATA_DIR: dataDir,
      DATABASE_URL: database.url ?? '',
      REDIS_URL,
      ...blobs.env,
      PUBLIC_URL: base,
      TRUST_PROXY: 'true',
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      // Webhooks to the test's receiver on 127.0.0.1.
      WEBHOOKS_ALLOW_PRIVATE: 'true',
    })
    const account = await newAccount(storage)
    token = (await newKey(storage, account.email, 'all')).key
    servers.push(...(await Promise.all(dataDirs.map((dir, i) => startServer(env(dir), ports[i] as number)))))
    upstreams = ports.slice(0, 3).map((p) => `127.0.0.1:${p}`)
    nginx = await startFleetNginx({ upstreams, port: nginxPort })
    cleanup = async () => {
      await nginx?.stop()
      await Promise.all(servers.map((server) => server?.stop()))
      await database.drop()
      await blobs.drop()
      await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })))
    }
  })
  after(async () => cleanup?.())

  /**
   * `read()` once `done` holds of it, or after 5 s: nginx writes a request's line after its answer has gone, so
   * a client may hear back before the line is in the log.
   */
  const settled = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    for (let waited = 0; ; waited += 20) {
      const value = await read()
      if (done(value) || waited > 5000) return value
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  /** Every request nginx passed on so far, in the order they ended, once there are at least `atLeast`. */
  const log = (atLeast = 0): Promise<Served[]> =>
    settled(
      async () =>
        (await nginx.requests())
          .split('\n')
          .filter(Boolean)
          .map((line) => {
            const [method = '', uri = '', status = '', _seconds, ...tried] = line.split(' ')
            return { method, uri, status: Number(status), upstream: tried.at(-1) ?? '' }
          }),
      (served) => served.length >= atLeast,
    )

  /**
   * How many requests for paths starting with `prefix` each process got, as nginx logged them; once `total`
   * are logged, when the caller knows how many were sent.
   */
  const servedBy = (method: string, prefix: string, total = 0) =>
    settled(
      async () => {
        const served = await log()
        return upstreams.map(
          (upstream) =>
            served.filter((r) => r.upstream === upstream && r.method === method && r.uri.startsWith(prefix))
              .length,
        )
      },
      (counts) => counts.reduce((sum, n) => sum + n, 0) >= total,
    )

  /**
   * `what` and nginx's error log, for an assertion on how requests were spread: a process nginx passed over
   * had failed a request, and the log says how.
   */
  const spreadMessage = async (what: unknown) =>
    `${JSON.stringify(what)}\nnginx's errors:\n${await nginx.errors()}`

  /** Uploads `content` through nginx as the real client does; resolves with the new file's id. */
  const uploadFile = async (name: string, type: string, content: Buffer) => {
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    const [grant] = await prepareUploads(base, token, [{ name, type, size: content.length }])
    assert.ok(grant)
    await uploadWithGrant(grant, content)
    const status = await waitForUpload(grant, token)
    assert.equal(status.status, 'complete', JSON.stringify(status))
    return (status as { result: { id: string } }).result.id
  }

  test('an upload whose parts reach different processes arrives whole; every process sends it', async () => {
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    const content = randomBytes(30 * 1024 * 1024 + 7)
    const [grant] = await prepareUploads(base, token, [
      { name: 'fleet.bin', type: 'application/octet-stream', size: content.length },
    ])
    assert.ok(grant)
    await uploadWithGrant(grant, content)
    const status = await waitForUpload(grant, token)
    assert.equal(status.status, 'complete', JSON.stringify(status))
    const fileId = (status as { result: { id: string } }).result.id
    // Its parts went to more than one process.
    const parts = await servedBy('POST', '/blob/mpu')
    assert.ok(parts.filter((count) => count > 0).length >= 2, `${parts}`)
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${base}/api/v1/files/${fileId}/download`, {
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(response.status, 200)
      assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(content))
    }
    assert.deepEqual(await servedBy('GET', `/api/v1/files/${fileId}/download`, 3), [1, 1, 1])
  })

  test('a blob request refused before its body is read is answered through nginx as itself, not as a 502', async () => {
    // nginx sends the whole body before it reads the answer: a process that answered and closed the
    // connection under it would have the refusal logged and passed on as nginx's 502.
    const body = randomBytes(15 * 1024 * 1024)
    const requests = Array.from({ length: 4 }, () => [
      fetch(`${base}/blob/?pathname=refused.bin`, {
        method: 'PUT',
        headers: {
          authorization: 'Bearer vercel_blob_client_not_a_token',
          'x-vercel-blob-access': 'private',
        },
        body,
      }),
      fetch(`${base}/blob/mpu?pathname=refused.bin`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer vercel_blob_client_not_a_token',
          'x-mpu-action': 'upload',
          'x-mpu-upload-id': 'unknown',
          'x-mpu-key': 'unknown',
          'x-mpu-part-number': '1',
        },
        body,
      }),
    ]).flat()
    for (const response of await Promise.all(requests)) {
      assert.equal(response.status, 403, await spreadMessage(response.status))
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'forbidden')
    }
    const refused = (await log()).filter((r) => r.uri.startsWith('/blob') && r.status >= 500)
    assert.deepEqual(refused, [], await spreadMessage(refused))
  })

  test('an image’s preview, made by the process that processed it, comes from every process', async () => {
    const fileId = await uploadFile('photo.png', 'image/png', await samplePng())
    const previews = []
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${base}/api/v1/files/${fileId}/preview`, {
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('content-type'), 'image/webp')
      previews.push(sha256(Buffer.from(await response.arrayBuffer())))
    }
    assert.equal(new Set(previews).size, 1)
    assert.deepEqual(await servedBy('GET', `/api/v1/files/${fileId}/preview`, 3), [1, 1, 1])
  })

  test('600 share views and 600 downloads spread over the processes are counted exactly', async () => {
    const fileId = await uploadFile('shared.txt', 'text/plain', Buffer.from('counted bytes'))
    const shared = await fetch(`${base}/api/v1/shares`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fileId }),
    })
    const share = ((await shared.json()) as { data: { id: string; publicUrl: string } }).data
    const page = new URL(share.publicUrl).pathname
    const answers = await Promise.all(
      Array.from({ length: 600 }, () => [`${base}${page}`, `${base}${page}/download`])
        .flat()
        .map(async (url) => {
          // Each from a visitor of its own, as a link's public is.
          const response = await requestFrom(visitorAddress(), url)
          return { status: response.status, text: response.text }
        }),
    )
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200])
    const counted = await fetch(`${base}/api/v1/shares/${share.id}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const data = ((await counted.json()) as { data: { viewCount: number; downloadCount: number } }).data
    assert.deepEqual({ views: data.viewCount, downloads: data.downloadCount }, { views: 600, downloads: 600 })
    const spread = await servedBy('GET', page, 1200)
    assert.ok(
      spread.every((count) => count > 300),
      await spreadMessage(spread),
    )
  })

  /** A new account that signs in with PASSWORD. */
  const ownerAccount = async () => {
    const email = newEmail()
    const made = await cli(
      storage,
      ['accounts', 'create', '--email', email, '--password-stdin'],
      `${PASSWORD}\n`,
    )
    assert.equal(made.code, 0, made.stderr)
    return email
  }

  test('a session made on one process, and its CSRF tokens, hold on the others; signing out ends it on all', async () => {
    const email = await ownerAccount()
    const client = new FormClient(base)
    const before = (await log()).length
    const signInPage = await client.send('GET', '/account/sign-in')
    const signedIn = await client.send('POST', '/account/sign-in', {
      email,
      password: PASSWORD,
      _csrf: FormClient.csrfOf(signInPage),
    })
    assert.equal(signedIn.status, 303, signedIn.text)
    const form = await client.send('GET', '/folders/new')
    assert.equal(form.status, 200)
    const created = await client.send('POST', '/folders', {
      name: 'Made across processes',
      _csrf: FormClient.csrfOf(form),
    })
    assert.equal(created.status, 303, created.text)
    const home = await client.send('GET', '/')
    assert.equal(home.status, 200)
    assert.match(home.text, /Made across processes/)
    const steps = (await log(before + 5)).slice(before)
    assert.equal(steps.length, 5)
    // Every process served the session; each form was posted to another process than the one that drew it.
    assert.equal(new Set(steps.map((step) => step.upstream)).size, 3, await spreadMessage(steps))
    assert.notEqual(steps[0]?.upstream, steps[1]?.upstream)
    assert.notEqual(steps[2]?.upstream, steps[3]?.upstream)

    const signedOut = await client.send('POST', '/account/sign-out', { _csrf: FormClient.csrfOf(home) })
    assert.equal(signedOut.status, 303)
    for (let i = 0; i < 3; i++) {
      const after = await client.send('GET', '/')
      assert.equal(after.status, 303, `request ${i} after signing out`)
      assert.match(after.location ?? '', /^\/account\/sign-in/)
    }
  })

  test('OAuth: authorized through every process, tokens from one, refreshed on another', {
    skip: browserMissing,
  }, async () => {
    const email = await ownerAccount()
    const oc = await register(base)
    const authorization = await authorizationUrl(oc, ['files:read'])
    const browser = await launchBrowser()
    let back: URL
    try {
      const page = await (await newContext(browser)).newPage()
      back = await followInBrowser(page, authorization.url, async (p) => {
        await signInIfAsked(p, email, PASSWORD)
        await consent(p, ['files:read'])
      })
    } finally {
      await browser.close()
    }
    // The process that handed out the code: the last step of the authorization, a redirect to the client.
    const authorizing = (await log()).filter((r) => r.uri.startsWith('/oauth/'))
    assert.ok(new Set(authorizing.map((r) => r.upstream)).size >= 2, await spreadMessage(authorizing))
    const codeFrom = authorizing.findLast((r) => r.method === 'GET' && r.uri.startsWith('/oauth/auth'))
    assert.ok(codeFrom)
    // Round-robin never sends two requests in a row to one process: once a probe has been served by the
    // process of the code, the exchange goes to another, and the refresh after it to the third.
    for (;;) {
      const logged = (await log()).length
      await (await fetch(`${base}/healthz`)).arrayBuffer()
      if ((await log(logged + 1)).at(-1)?.upstream === codeFrom.upstream) break
    }
    const beforeTokens = (await log()).length
    const tokens = await exchange(oc, authorization, back)
    const refreshed = await oauth.processRefreshTokenResponse(
      oc.as,
      oc.client,
      await oauth.refreshTokenGrantRequest(oc.as, oc.client, oauth.None(), tokens.refresh_token as string, {
        ...INSECURE,
        additionalParameters: { resource: oc.resource },
      }),
    )
    const [exchanged, refreshedBy] = (await log(beforeTokens + 2))
      .filter((r) => r.uri === '/oauth/token')
      .slice(-2)
    assert.deepEqual(
      new Set([codeFrom.upstream, exchanged?.upstream, refreshedBy?.upstream]).size,
      3,
      'the code, its exchange and the refresh each on a process of its own',
    )
    // Each process keeps both tokens in memory once it has served them (round-robin: three requests each).
    for (let i = 0; i < 3; i++) {
      assert.equal(await apiStatus(base, refreshed.access_token), 200)
      assert.equal(await apiStatus(base, tokens.access_token), 200, 'the first access token still works')
    }
    // The spent refresh token replayed, at one process: the grant ends, and with it both access tokens on
    // every process, within moments (each learns of it by a notification).
    const replay = await tokenError(
      oauth
        .refreshTokenGrantRequest(oc.as, oc.client, oauth.None(), tokens.refresh_token as string, INSECURE)
        .then((response) => oauth.processRefreshTokenResponse(oc.as, oc.client, response)),
    )
    assert.equal(replay, 'invalid_grant')
    const deadline = Date.now() + 1000
    for (const token of [refreshed.access_token, tokens.access_token]) {
      let refusals = 0
      while (refusals < 3) {
        if ((await apiStatus(base, token)) === 401) refusals += 1
        else assert.ok(Date.now() < deadline, 'a process still takes a token of the replayed grant')
      }
    }
  })

  test('rate limits and sign-in lockouts hold across processes (Redis)', async () => {
    // RATE_LIMIT_MAX requests a minute for a key, wherever they land: 1,200 at once get about 1,000 through
    // (the rest of the budget refills as they go), not 1,000 per process.
    const { key } = await newKey(storage, (await newAccount(storage)).email, 'files:read')
    const statuses: number[] = []
    let sent = 0
    const started = Date.now()
    const workers = Array.from({ length: 16 }, async () => {
      while (sent < 1200) {
        sent++
        const response = await fetch(`${base}/api/v1/files?limit=1`, {
          headers: { authorization: `Bearer ${key}` },
        })
        await response.arrayBuffer()
        statuses.push(response.status)
      }
    })
    await Promise.all(workers)
    const seconds = (Date.now() - started) / 1000
    const passed = statuses.filter((status) => status === 200).length
    const refilled = Math.ceil((RATE_LIMIT_MAX / 60) * seconds)
    assert.deepEqual([...new Set(statuses)].sort(), [200, 429])
    assert.ok(
      passed >= RATE_LIMIT_MAX && passed <= RATE_LIMIT_MAX + refilled + 16,
      `${passed} in ${seconds} s`,
    )

    // Ten wrong passwords for one account from one address, spread over the processes: the eleventh try,
    // right or not, is refused by whichever process gets it.
    const email = await ownerAccount()
    const guesser = new FormClient(base)
    const signIns = (atLeast = 0) =>
      settled(
        async () => (await log()).filter((r) => r.uri === '/account/sign-in'),
        (lines) => lines.length >= atLeast,
      )
    const beforeGuesses = (await signIns()).length
    for (let i = 0; i < 10; i++) {
      const page = await guesser.send('GET', '/account/sign-in')
      const wrong = await guesser.send('POST', '/account/sign-in', {
        email,
        password: `wrong ${i}`,
        _csrf: FormClient.csrfOf(page),
      })
      assert.equal(wrong.status, 401, `attempt ${i}`)
    }
    const attempts = (await signIns(beforeGuesses + 20)).slice(-20)
    assert.equal(new Set(attempts.map((r) => r.upstream)).size, 3, await spreadMessage(attempts))
    for (let i = 0; i < 3; i++) {
      const page = await guesser.send('GET', '/account/sign-in')
      const refused = await guesser.send('POST', '/account/sign-in', {
        email,
        password: PASSWORD,
        _csrf: FormClient.csrfOf(page),
      })
      assert.equal(refused.status, 429, `try ${i} after the lockout`)
    }
  })

  test('strangers from many addresses use up an account’s sign-ins; the owner’s browser still signs in, on any process', async () => {
    const email = await ownerAccount()
    // The owner signed in once from this browser, and out again.
    const owner = new FormClient(base)
    const page = await owner.send('GET', '/account/sign-in')
    const first = await owner.send('POST', '/account/sign-in', {
      email,
      password: PASSWORD,
      _csrf: FormClient.csrfOf(page),
    })
    assert.equal(first.status, 303)
    const home = await owner.send('GET', '/')
    await owner.send('POST', '/account/sign-out', { _csrf: FormClient.csrfOf(home) })
    // 110 wrong passwords, ten from each of eleven addresses, spread over the processes: the account's own
    // allowance of 100 (in Redis, shared by every process) is used up.
    const answers: number[] = []
    await Promise.all(
      Array.from({ length: 11 }, async () => {
        const stranger = new FormClient(base)
        for (let i = 0; i < 10; i++) {
          const form = await stranger.send('GET', '/account/sign-in')
          const wrong = await stranger.send('POST', '/account/sign-in', {
            email,
            password: `guess ${i}`,
            _csrf: FormClient.csrfOf(form),
          })
          answers.push(wrong.status)
        }
      }),
    )
    assert.ok(answers.filter((status) => status === 401).length >= 100, `${answers}`)
    assert.ok(answers.includes(429), `${answers}`)
    // A new browser waits, the right password or not; the owner's own one is let in, whichever process answers.
    const newcomer = new FormClient(base)
    const form = await newcomer.send('GET', '/account/sign-in')
    const refused = await newcomer.send('POST', '/account/sign-in', {
      email,
      password: PASSWORD,
      _csrf: FormClient.csrfOf(form),
    })
    assert.equal(refused.status, 429)
    for (let i = 0; i < 3; i++) {
      const again = await owner.send('GET', '/account/sign-in')
      const back = await owner.send('POST', '/account/sign-in', {
        email,
        password: PASSWORD,
        _csrf: FormClient.csrfOf(again),
      })
      assert.equal(back.status, 303, `sign-in ${i} of the owner's browser`)
      const signedIn = await owner.send('GET', '/')
      await owner.send('POST', '/account/sign-out', { _csrf: FormClient.csrfOf(signedIn) })
    }
  })

  test('through nginx a client cannot choose its address: a new X-Forwarded-For on every request changes nothing', async () => {
    let spoofed = 0
    const another = () => ({ 'x-forwarded-for': `6.6.${spoofed >> 8}.${spoofed++ & 255}` })

    // Wrong passwords for one account: the eleventh try from this client is refused, whatever it claims.
    const email = await ownerAccount()
    const guesser = new FormClient(base)
    const answers: number[] = []
    for (let i = 0; i < 12; i++) {
      const page = await guesser.send('GET', '/account/sign-in', undefined, another())
      const wrong = await guesser.send(
        'POST',
        '/account/sign-in',
        { email, password: `wrong ${i}`, _csrf: FormClient.csrfOf(page) },
        another(),
      )
      answers.push(wrong.status)
    }
    assert.deepEqual(answers, [...Array(10).fill(401), 429, 429])
    // The owner's record of failed sign-ins names the address they came from, not what the client claimed.
    const reader = openDatabase({ dataDir: storage.dataDir, databaseUrl: storage.databaseUrl, poolSize: 1 })
    try {
      const recorded = await reader.kysely
        .selectFrom('sign_in_failures')
        .innerJoin('accounts', 'accounts.id', 'sign_in_failures.account_id')
        .select('sign_in_failures.client')
        .where('accounts.email', '=', email)
        .execute()
      assert.deepEqual([...new Set(recorded.map((row) => row.client))], [`ip:${guesser.address}`])
    } finally {
      await reader.close()
    }

    // Client registrations: 20 an hour from an address.
    const registrar = visitorAddress()
    const registered: number[] = []
    for (let i = 0; i < 22; i++) {
      const answer = await requestFrom(registrar, `${base}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...another() },
        body: JSON.stringify({
          client_name: 'Spoofer',
          application_type: 'native',
          redirect_uris: ['http://127.0.0.1/callback'],
          token_endpoint_auth_method: 'none',
        }),
      })
      registered.push(answer.status)
    }
    assert.deepEqual(registered, [...Array(20).fill(201), 429, 429])

    // Guessed API keys count against the client's address: past RATE_LIMIT_MAX a minute, refused.
    const guessing = visitorAddress()
    const statuses = new Map<number, number>()
    let sent = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < RATE_LIMIT_MAX + 100) {
          sent++
          const answer = await requestFrom(guessing, `${base}/api/v1/files`, {
            headers: { authorization: `Bearer coffer_${randomBytes(16).toString('hex')}`, ...another() },
          })
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        }
      }),
    )
    assert.deepEqual([...statuses.keys()].sort(), [401, 429], JSON.stringify([...statuses]))
    assert.ok((statuses.get(401) ?? 0) <= RATE_LIMIT_MAX + 100, JSON.stringify([...statuses]))
  })

  test('10,000 webhook deliveries shared by the three processes: each attempt made once', async () => {
    const EVENTS = 10_000
    const seen = new Map<string, number>()
    const receiver = createServer((request, response) => {
      const id = String(request.headers['webhook-id'])
      seen.set(id, (seen.get(id) ?? 0) + 1)
      request.resume()
      request.on('end', () => response.end())
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const reader = openDatabase({ dataDir: storage.dataDir, databaseUrl: storage.databaseUrl, poolSize: 1 })
    try {
      const made = await fetch(`${base}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
          events: ['file.created'],
        }),
      })
      assert.equal(made.status, 201)
      const endpointId = ((await made.json()) as { data: { id: string } }).data.id
      const { account_id: accountId } = await reader.kysely
        .selectFrom('webhook_endpoints')
        .select('account_id')
        .where('id', '=', endpointId)
        .executeTakeFirstOrThrow()
      // Written as the outbox holds them, all due at once: what the senders share is under test here.
      const now = Date.now()
      await reader.kysely.transaction().execute(async (trx) => {
        for (let from = 0; from < EVENTS; from += 1000) {
          const ids = Array.from({ length: 1000 }, (_, i) => `evt_fleet_${from + i}`)
          await trx
            .insertInto('events')
            .values(
              ids.map((id) => ({
                id,
                account_id: accountId,
                type: 'webhook.ping',
                payload: '{}',
                created_at: now,
              })),
            )
            .execute()
          await trx
            .insertInto('webhook_deliveries')
            .values(
              ids.map((id) => ({
                id: `dlv_${id}`,
                endpoint_id: endpointId,
                event_id: id,
                state: 'pending' as const,
                attempts: 0,
                next_attempt_at: now,
                lease_until: null,
                created_at: now,
                updated_at: now,
              })),
            )
            .execute()
        }
      })
      const started = Date.now()
      for (let waited = 0; seen.size < EVENTS && waited < 120_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const seconds = (Date.now() - started) / 1000
      console.log(`# ${EVENTS} deliveries by three processes in ${seconds.toFixed(1)} s`)
      assert.equal(seen.size, EVENTS)
      assert.deepEqual([...new Set(seen.values())], [1], 'no webhook-id was received twice')
      // Each attempt is recorded after its answer: the last ones may still be on their way to the database.
      const recorded = () =>
        reader.kysely
          .selectFrom('webhook_attempts')
          .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('attempt').as('most')])
          .where('delivery_id', 'like', 'dlv_evt_fleet_%')
          .executeTakeFirstOrThrow()
      let attempts = await recorded()
      for (let waited = 0; Number(attempts.n) < EVENTS && waited < 30_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        attempts = await recorded()
      }
      assert.deepEqual({ n: Number(attempts.n), most: Number(attempts.most) }, { n: EVENTS, most: 1 })
      const deleted = await fetch(`${base}/api/v1/webhooks/${endpointId}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(deleted.status, 200)
    } finally {
      await reader.close()
      await new Promise((resolve) => receiver.close(resolve))
    }
  })

  /**
   * `fetch` with the suite's key, waiting out a 429 as a client does: the key's budget of RATE_LIMIT_MAX a minute
   * is shared with the status polls of every upload of the suite, which poll faster when the machine is slower.
   */
  const patiently = async (url: string, init: RequestInit = {}): Promise<Response> => {
    for (;;) {
      const response = await fetch(url, { ...init, headers: { authorization: `Bearer ${token}` } })
      if (response.status !== 429) return response
      await response.arrayBuffer()
      await new Promise((resolve) =>
        setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000),
      )
    }
  }

  test('one process killed in the middle of uploads and deletes: the clients go on through the others', async () => {
    // Files to delete while the process dies, each stored first.
    const doomed = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        uploadFile(`doomed-${i}.txt`, 'text/plain', randomBytes(1000 + i)),
      ),
    )
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    const files = Array.from({ length: 12 }, (_, i) => randomBytes(6 * 1024 * 1024 + i))
    const grants = await prepareUploads(
      base,
      token,
      files.map((content, i) => ({
        name: `f${i}.bin`,
        type: 'application/octet-stream',
        size: content.length,
      })),
    )
    let retried = 0
    /** Runs `attempt` until it works, three times at most, as a client whose connection broke does. */
    const withRetries = async (attempt: (tries: number) => Promise<unknown>) => {
      for (let tries = 1; ; tries++) {
        try {
          return await attempt(tries)
        } catch (error) {
          if (tries === 3) throw error
          retried++
        }
      }
    }
    // The page and the SDK send an upload again with the same grant.
    const uploads = grants.map((grant: Grant, i) =>
      withRetries(() => uploadWithGrant(grant, files[i] as Buffer)),
    )
    // Deletes spread over the second around the kill; one that finds the file gone was done by an earlier try.
    const deletes = doomed.map((fileId, i) =>
      withRetries(async (tries) => {
        if (tries === 1) await new Promise((resolve) => setTimeout(resolve, i * 50))
        const response = await patiently(`${base}/api/v1/files/${fileId}`, { method: 'DELETE' })
        await response.arrayBuffer()
        if (response.status === 404 && tries > 1) return
        if (response.status !== 200) throw new Error(`DELETE answered ${response.status}`)
      }),
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    const before = await servedBy('POST', '/blob/mpu')
    await servers[1]?.kill()
    await Promise.all([...uploads, ...deletes])
    // The killed process had parts of them in hand.
    assert.ok((before[1] ?? 0) > 0, `${before}`)
    console.log(
      `fleet: ${retried} of 24 requests sent again after the kill; upload requests per process ${before}`,
    )
    for (const [i, grant] of grants.entries()) {
      const status = await waitForUpload(grant, token)
      assert.equal(status.status, 'complete', `file ${i}: ${JSON.stringify(status)}`)
      const fileId = (status as { result: { id: string } }).result.id
      const response = await patiently(`${base}/api/v1/files/${fileId}/download`)
      assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(files[i] as Buffer))
    }
    for (const fileId of doomed) {
      const response = await patiently(`${base}/api/v1/files/${fileId}`)
      await response.arrayBuffer()
      assert.equal(response.status, 404)
    }
    // Nothing to repair, nothing missing (leftovers of the killed process's writes wait for their grace).
    const run = await cli(storage, ['storage', 'check', '--json'])
    assert.equal(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.deepEqual([report.problems, report.missingBlobs.count], [0, 0])
  })
})
