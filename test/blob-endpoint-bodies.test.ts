// What is left of a refused blob request's body is read and thrown away before the answer (a proxy in front would
// otherwise turn the answer into its 502), also when a reader gave up on the body mid-way: over real HTTP, with
// a client that sends the whole body and reads the answer.
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import {
  bodyOf,
  DRAINED_BODY_LIMIT_BYTES,
  drainRefusedBody,
} from '../src/resources/uploads/blob-endpoint/request-bodies.ts'

describe('the body of a refused blob request', () => {
  let server: http.Server
  let base: string
  /** What the server did with the body: drained or not, and how long that took. */
  const handled: { drained: boolean; ms: number }[] = []

  before(async () => {
    server = http.createServer(async (request, response) => {
      // As the store's upload reads a part: one chunk, then a read left waiting when the store fails.
      const chunks = bodyOf(request)[Symbol.asyncIterator]()
      await chunks.next()
      void chunks.next().catch(() => {})
      const started = Date.now()
      const drained = await drainRefusedBody(request)
      handled.push({ drained, ms: Date.now() - started })
      if (!drained) response.setHeader('connection', 'close')
      response.statusCode = 503
      response.end('{"error":{"code":"service_unavailable"}}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => {
    server.closeAllConnections()
    server.close()
  })

  test('a body a reader gave up on mid-way is read to its end at once, and the refusal arrives', async () => {
    const body = Buffer.alloc(8 * 1024 * 1024, 7)
    const response = await fetch(`${base}/blob/mpu`, { method: 'POST', body })
    assert.equal(response.status, 503)
    assert.match(await response.text(), /service_unavailable/)
    const [last] = handled.slice(-1)
    assert.equal(last?.drained, true)
    // Before the fix the reader's listener kept the body from flowing: the drain waited out its 10 s.
    assert.ok((last?.ms ?? Infinity) < 5000, `drained in ${last?.ms} ms`)
  })

  test('a body announced larger than the limit, or of unknown length, is left unread', async () => {
    for (const headers of [
      { 'content-length': String(DRAINED_BODY_LIMIT_BYTES + 1) },
      { 'transfer-encoding': 'chunked' },
    ]) {
      const answered = await new Promise<number>((resolve, reject) => {
        const request = http.request(`${base}/blob`, { method: 'PUT', headers }, (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        })
        request.on('error', reject)
        // A first chunk only: the rest would never come.
        request.write(Buffer.alloc(64 * 1024))
      })
      assert.equal(answered, 503)
      assert.equal(handled.at(-1)?.drained, false, JSON.stringify(headers))
    }
  })
})
