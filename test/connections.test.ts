// Slow and idle clients are cut off (src/http/connections.ts), here with limits of a second or two: headers
// that never end, a body that stops arriving (408 in the envelope), an idle keep-alive connection; and a body
// that keeps moving, however slowly, is received whole.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.ts'
import { createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const LIMITS = { HEADERS_TIMEOUT_SECONDS: '1', IDLE_TIMEOUT_SECONDS: '2', KEEP_ALIVE_TIMEOUT_SECONDS: '1' }

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

    test('a body that keeps moving is received whole, however long it takes in all', async () => {
      const socket = await open()
      const body = JSON.stringify({ name: 'slow but steady' })
      socket.write(
        `POST /api/v1/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      )
      const reading = untilClosed(socket)
      // 2 s in all, a byte every 400 ms: longer than the idle limit, never idle for it.
      for (const piece of [
        body.slice(0, 1),
        body.slice(1, 2),
        body.slice(2, 3),
        body.slice(3, 4),
        body.slice(4, 5),
      ]) {
        await new Promise((resolve) => setTimeout(resolve, 400))
        socket.write(piece)
      }
      socket.write(body.slice(5))
      const { text, ms } = await reading
      assert.match(text, /^HTTP\/1\.1 201 /)
      assert.equal(bodyOf(text).data.name, 'slow but steady')
      assert.ok(ms >= 2000, `${ms} ms`)
    })
  })
}

test('the limits are settings, each validated', () => {
  const config = loadConfig({
    HEADERS_TIMEOUT_SECONDS: '7',
    IDLE_TIMEOUT_SECONDS: '9',
    KEEP_ALIVE_TIMEOUT_SECONDS: '3',
  })
  assert.deepEqual(config.timeouts, { headersMs: 7000, idleMs: 9000, keepAliveMs: 3000 })
  assert.deepEqual(loadConfig({}).timeouts, { headersMs: 20_000, idleMs: 60_000, keepAliveMs: 5000 })
  for (const [name, value] of [
    ['HEADERS_TIMEOUT_SECONDS', '0'],
    ['IDLE_TIMEOUT_SECONDS', 'soon'],
    ['KEEP_ALIVE_TIMEOUT_SECONDS', '3601'],
    ['HEADERS_TIMEOUT_SECONDS', '60'],
  ]) {
    assert.throws(() => loadConfig({ [name as string]: value as string }), ConfigError, name)
  }
})
