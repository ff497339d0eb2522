// Webhook targets given by name (issue 26, safety): a real name that resolves, through the system's resolver as
// in production, to the cloud metadata address is refused when the endpoint is made; and a name that resolved to
// an allowed address when the endpoint was made, then to the metadata address (DNS rebinding), is refused at the
// delivery, the target never asked. The server runs as its operators run it, in a process whose `/etc/hosts` is a
// file of the test's (see `ServerOptions.hostsFile`), rewritten between the two answers. On both engines.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { newAccount, newKey } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'

const METADATA_ADDRESS = '169.254.169.254'

for (const engine of ENGINES) {
  describe(`webhook targets by name [${engine}]`, () => {
    let dataDir: string
    let database: Awaited<ReturnType<typeof freshDatabase>>
    let hostsFile: string
    let server: ServerProcess
    let token: string
    /** The paths the receiver was asked for. */
    const received: string[] = []
    const receiver = createServer((request, response) => {
      received.push(request.url ?? '')
      request.resume()
      request.on('end', () => response.writeHead(204).end())
    })
    let receiverPort: number

    /** What the server's resolver answers from now on: `name address` lines, as /etc/hosts holds them. */
    const hosts = (lines: string[]) =>
      // Written in place (the same file, not a new one renamed over it): the bind mount shows this file.
      writeFile(hostsFile, `127.0.0.1 localhost\n${lines.join('\n')}\n`)

    const api = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${server.base}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      })
      return { status: res.status, body: (await res.json()) as any }
    }

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-webhook-names-'))
      database = await freshDatabase(engine, dataDir)
      hostsFile = path.join(dataDir, 'hosts')
      await hosts([])
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      receiverPort = (receiver.address() as AddressInfo).port
      const storage = { dataDir, databaseUrl: database.url }
      const env = {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url ?? '',
        // The receiver is on 127.0.0.1; the metadata address is refused with the switch on as without it.
        WEBHOOKS_ALLOW_PRIVATE: 'true',
      }
      server = await startServer(env, undefined, { hostsFile })
      const account = await newAccount(storage)
      token = (await newKey(storage, account.email, 'webhooks:read,webhooks:write')).key
    })
    after(async () => {
      await server?.stop()
      await new Promise((resolve) => receiver.close(resolve))
      await database?.drop()
      await rm(dataDir, { recursive: true, force: true })
    })

    test('a name resolving to the metadata address is refused when the endpoint is made', async () => {
      await hosts([
        `${METADATA_ADDRESS} metadata.coffer.test`,
        `127.0.0.1 ${METADATA_ADDRESS}.hooks.coffer.test`,
      ])
      // The check is of the answer, not of the name: a name that merely looks like the address is no matter.
      const allowed = await api('POST', '/api/v1/webhooks', {
        url: `http://${METADATA_ADDRESS}.hooks.coffer.test:${receiverPort}/fine`,
        events: ['file.created'],
      })
      assert.equal(allowed.status, 201)
      await api('DELETE', `/api/v1/webhooks/${allowed.body.data.id}`)

      for (const url of ['https://metadata.coffer.test/latest/meta-data', 'http://metadata.coffer.test/x']) {
        const refused = await api('POST', '/api/v1/webhooks', { url, events: ['file.created'] })
        assert.equal(refused.status, 400, url)
        assert.equal(refused.body.error.code, 'invalid_request')
        assert.match(refused.body.error.message, /169\.254\.169\.254 is a linkLocal address/)
      }
    })

    test('a name rebound to the metadata address after the endpoint was made is refused at the delivery', async () => {
      await hosts(['127.0.0.1 rebinding.coffer.test'])
      const made = await api('POST', '/api/v1/webhooks', {
        url: `http://rebinding.coffer.test:${receiverPort}/rebinding`,
        events: ['file.created'],
      })
      assert.equal(made.status, 201)
      const { id } = made.body.data

      // While the name answers 127.0.0.1, the ping is delivered: the name is looked up, and reaches the receiver.
      assert.equal((await api('POST', `/api/v1/webhooks/${id}/ping`)).status, 202)
      const first = await settledDelivery(0)
      assert.equal(first.attempts.at(-1).status, 204)
      assert.deepEqual(received, ['/rebinding'])

      await hosts([`${METADATA_ADDRESS} rebinding.coffer.test`])
      assert.equal((await api('POST', `/api/v1/webhooks/${id}/ping`)).status, 202)
      const second = await settledDelivery(1)
      const [attempt] = second.attempts
      assert.equal(attempt.status, null)
      assert.match(attempt.error, /^Not sent: The host resolves to 169\.254\.169\.254 is a linkLocal address/)
      assert.ok(second.nextAttemptAt, 'a refused attempt is retried, in case the name answers well again')
      assert.deepEqual(received, ['/rebinding'], 'the receiver was not asked again')

      /** The delivery of the `index`-th ping (oldest first), once it has an attempt. */
      async function settledDelivery(index: number): Promise<any> {
        const deadline = Date.now() + 15_000
        for (;;) {
          const { body } = await api('GET', `/api/v1/webhooks/${id}/deliveries`)
          const delivery = body.data.toReversed()[index]
          if (delivery?.attempts.length > 0) return delivery
          assert.ok(Date.now() < deadline, `the delivery of ping ${index + 1} within 15 s`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
    })
  })
}
