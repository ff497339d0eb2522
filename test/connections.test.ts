// Slow and idle clients are cut off (src/platform/http/connections.ts), here with limits of a few seconds: headers
// that never end, a body that stops arriving (408 in the envelope), an idle keep-alive connection, a small body
// that trickles past its limit, an upload below the minimum rate, connections past the cap of an address; and
// a body that keeps moving within its limit, or an upload at the minimum rate however long, is received whole
// (issue 23, item 9).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../src/platform/config.ts'
import { createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import {
  handshakeToken,
  type ListeningContext,
  prepareUploads,
  startListening,
  waitForUpload,
} from './support/uploads.ts'

const LIMITS = {
  HEADERS_TIMEOUT_SECONDS: '1',
  IDLE_TIMEOUT_SECONDS: '2',
  KEEP_ALIVE_TIMEOUT_SECONDS: '1',
  BODY_TIMEOUT_SECONDS: '4',
  UPLOAD_MIN_BYTES_PER_SECOND: '100',
}

/** Writes `pieces` one every `everyMs`, then the rest at once; stops when the connection closes. */
async function trickle(socket: Socket, pieces: string[], everyMs: number, rest = ''): Promise<void> {
  for (const piece of pieces) {
    await new Promise((resolve) => setTimeout(resolve, everyMs))
    if (socket.destroyed || socket.writableEnded) return
    socket.write(piece)
  }
  if (rest && !socket.destroyed) socket.write(rest)
}

/** Everything the server sends until it closes the connection, and how long that took. */
async function untilClosed(socket: Socket): Promise<{ text: string; ms: number }> {
  const started = Date.now()
  let text = ''
  socket.setEncoding('utf8')
  for await (const chunk of socket) text += chunk
  return { text, ms: Date.now() - started }
}

const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))

for (const engine of ENGINES) {
  describe(`slow and idle clients [${engine}]`, () => {
    let c: ListeningContext
    let a: TestAccount
    let port: number
    before(async () => {
      c = await startListening(engine, { env: LIMITS })
      a = await createAccount(c.app)
      port = Number(new URL(c.base).port)
    })
    after(async () => c?.stop())

    async function open(): Promise<Socket> {
      const socket = connect(port, '127.0.0.1')
      await once(socket, 'connect')
      return socket
    }

    test('a body that stops arriving gets a 408 in the envelope, and the connection is closed', async () => {
      const socket = await open()
      socket.write(
        'POST /api/v1/files/uploads/handshake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100\r\n\r\n{"ty',
      )
      const { text, ms } = await untilClosed(socket)
      assert.match(text, /^HTTP\/1\.1 408 /)
      assert.deepEqual(bodyOf(text).error.code, 'request_timeout')
      assert.ok(ms >= 1900 && ms < 5000, `cut off after ${ms} ms`)
    })

    test('headers that never end are cut off with a 408', async () => {
      const socket = await open()
      socket.write('GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Slow: a')
      const { text, ms } = await untilClosed(socket)
      assert.match(text, /^HTTP\/1\.1 408 /)
      assert.equal(bodyOf(text).error.code, 'request_timeout')
      assert.ok(ms < 4000, `cut off after ${ms} ms`)
    })

    test('an idle keep-alive connection is closed', async () => {
      const socket = await open()
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
      const { text, ms } = await untilClosed(socket)
      assert.match(text, /^HTTP\/1\.1 200 /)
      assert.ok(ms >= 900 && ms < 4000, `closed after ${ms} ms`)
    })

    test('a small body that keeps moving is received whole within the body limit', async () => {
      const socket = await open()
      const body = JSON.stringify({ name: 'slow but steady' })
      socket.write(
        `POST /api/v1/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      )
      const reading = untilClosed(socket)
      // 2 s in all, a byte every 400 ms: longer than the idle limit, never idle for it, within the body's.
      await trickle(socket, [...body.slice(0, 5)], 400, body.slice(5))
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 201 /)
      assert.equal(bodyOf(text).data.name, 'slow but steady')
      assert.ok(ms >= 2000, `${ms} ms`)
    })

    test('a small body that trickles for longer than the body limit gets a 408, however it moves', async () => {
      const socket = await open()
      socket.write(
        `POST /api/v1/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n',
      )
      const reading = untilClosed(socket)
      // A byte every 400 ms, never idle: only the body's own limit (4 s here) ends it.
      void trickle(
        socket,
        Array.from({ length: 30 }, () => ' '),
        400,
      )
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 408 /)
      assert.equal(bodyOf(text).error.code, 'request_timeout')
      assert.ok(ms >= 3900 && ms < 6500, `cut off after ${ms} ms`)
    })

    test('a body that trickles after an early answer (401 before it was read) is cut off all the same', async () => {
      const socket = await open()
      socket.write(
        'POST /api/v1/folders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n',
      )
      const reading = untilClosed(socket)
      // Node reads the rest of a body answered early, to keep the connection: a byte every 400 ms for 12 s
      // would hold it that long.
      void trickle(
        socket,
        Array.from({ length: 30 }, () => ' '),
        400,
      )
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 401 /)
      assert.ok(ms >= 3900 && ms < 6500, `closed after ${ms} ms`)
    })

    /** An upload's PUT to the blob endpoint, headers sent, for `size` bytes. */
    async function startUpload(size: number) {
      const [grant] = await prepareUploads(c.base, a.token, [
        { name: 'slow.bin', type: 'application/octet-stream', size },
      ])
      assert.ok(grant)
      const token = await handshakeToken(grant)
      const socket = await open()
      socket.write(
        `PUT /blob/?${new URLSearchParams({ pathname: grant.pathname })} HTTP/1.1\r\nHost: x\r\n` +
          `Authorization: Bearer ${token}\r\nX-Vercel-Blob-Access: private\r\n` +
          `X-Content-Type: application/octet-stream\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n`,
      )
      return { grant, socket, reading: untilClosed(socket) }
    }

    test('an upload that moves at the minimum rate is received whole, longer than the body limit', async () => {
      // 60 bytes every 400 ms (150 B/s, over the 100 required) for 6 s: past the 4 s of a small body.
      const { grant, socket, reading } = await startUpload(900)
      await trickle(
        socket,
        Array.from({ length: 15 }, () => 'x'.repeat(60)),
        400,
      )
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 200 /)
      assert.ok(ms >= 6000, `${ms} ms`)
      assert.equal((await waitForUpload(grant, a.token)).status, 'complete')
    })

    test('an upload that trickles below the minimum rate is cut off with a 408, never idle', async () => {
      // A byte every 400 ms: never idle for 2 s, but 5 bytes where each 2 s must bring 200.
      const { socket, reading } = await startUpload(1000)
      void trickle(
        socket,
        Array.from({ length: 30 }, () => 'x'),
        400,
      )
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 408 /)
      assert.equal(bodyOf(text).error.code, 'request_timeout')
      assert.ok(ms >= 1900 && ms < 4500, `cut off after ${ms} ms`)
    })
  })

  describe(`connections per address [${engine}]`, () => {
    let c: ListeningContext
    let port: number
    before(async () => {
      c = await startListening(engine, { env: { MAX_CONNECTIONS_PER_ADDRESS: '3' } })
      port = Number(new URL(c.base).port)
    })
    after(async () => c?.stop())

    test('one address holds at most MAX_CONNECTIONS_PER_ADDRESS connections; the next is closed at once', async () => {
      const held = await Promise.all(
        Array.from({ length: 3 }, async () => {
          const socket = connect(port, '127.0.0.1')
          await once(socket, 'connect')
          return socket
        }),
      )
      const extra = connect(port, '127.0.0.1')
      const { text, ms } = await untilClosed(extra)
      assert.equal(text, '', 'closed without an answer')
      assert.ok(ms < 1000, `closed after ${ms} ms`)
      // The ones held still answer; once one is closed, another connection is taken.
      held[0]?.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
      assert.match((await untilClosed(held[0] as Socket)).text, /^HTTP\/1\.1 200 /)
      await new Promise((resolve) => setTimeout(resolve, 100))
      const next = connect(port, '127.0.0.1')
      await once(next, 'connect')
      next.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
      assert.match((await untilClosed(next)).text, /^HTTP\/1\.1 200 /)
      for (const socket of held) socket.destroy()
    })
  })
}

test('the limits are settings, each validated', () => {
  const config = loadConfig({
    HEADERS_TIMEOUT_SECONDS: '7',
    IDLE_TIMEOUT_SECONDS: '9',
    KEEP_ALIVE_TIMEOUT_SECONDS: '3',
    BODY_TIMEOUT_SECONDS: '12',
    UPLOAD_MIN_BYTES_PER_SECOND: '0',
    MAX_CONNECTIONS_PER_ADDRESS: '50',
  })
  assert.deepEqual(config.timeouts, {
    headersMs: 7000,
    idleMs: 9000,
    keepAliveMs: 3000,
    bodyMs: 12_000,
    uploadMinBytesPerSecond: 0,
    connectionsPerAddress: 50,
  })
  assert.deepEqual(loadConfig({}).timeouts, {
    headersMs: 20_000,
    idleMs: 60_000,
    keepAliveMs: 5000,
    bodyMs: 10_000,
    uploadMinBytesPerSecond: 1024,
    connectionsPerAddress: 256,
  })
  // Behind a proxy every connection is the proxy's: no cap unless asked for.
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }).timeouts.connectionsPerAddress, 0)
  for (const [name, value] of [
    ['HEADERS_TIMEOUT_SECONDS', '0'],
    ['IDLE_TIMEOUT_SECONDS', 'soon'],
    ['KEEP_ALIVE_TIMEOUT_SECONDS', '3601'],
    ['HEADERS_TIMEOUT_SECONDS', '60'],
    ['BODY_TIMEOUT_SECONDS', '0'],
    ['UPLOAD_MIN_BYTES_PER_SECOND', '-1'],
    ['MAX_CONNECTIONS_PER_ADDRESS', 'many'],
  ]) {
    assert.throws(() => loadConfig({ [name as string]: value as string }), ConfigError, name)
  }
})
