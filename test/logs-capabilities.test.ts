// The public ids of share links and file requests are capabilities: whoever has one may use the link. A log
// line names them by their first four characters only, whatever the page, download, or public API call
// (issue 23, item 13).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redactedUrl } from '../src/platform/http/request-logger.ts'
import { call, captureLogs, createAccount, createFile, describeEachEngine } from './support/harness.ts'
import { newRequest, publicIdOf } from './support/requests-helpers.ts'

test('a URL keeps four characters of a public id, and none of a credential', () => {
  assert.equal(
    redactedUrl('/s/abcdefghijklmnop/download?disposition=inline'),
    '/s/abcd…/download?disposition=inline',
  )
  assert.equal(redactedUrl('/r/abcdefghijklmnop'), '/r/abcd…')
  assert.equal(
    redactedUrl('/api/v1/public/requests/abcdefghijkl/uploads'),
    '/api/v1/public/requests/abcd…/uploads',
  )
  assert.equal(redactedUrl('/s/ab'), '/s/ab…')
  assert.equal(redactedUrl('/api/v1/files?key=coffer_secret'), '/api/v1/files?key=[redacted]')
  assert.equal(redactedUrl('/api/v1/files/fil_123'), '/api/v1/files/fil_123')
})

const logs = captureLogs('trace')
describeEachEngine(
  'capabilities in the log',
  (ctx) => {
    test('share and request pages, downloads and the public API log no public id in full', async () => {
      const { app } = ctx()
      const a = await createAccount(app)
      const file = await createFile(ctx(), a.id, { name: 'logged.txt', content: 'x' })
      const share = await call(app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } })
      const sharePath = new URL(share.body.data.publicUrl).pathname
      const shareId = sharePath.split('/').pop() as string
      const request = await newRequest(app, a.token)
      const requestId = publicIdOf(request)
      for (const url of [
        sharePath,
        `${sharePath}/download`,
        `${sharePath}/preview`,
        `/r/${requestId}`,
        `/api/v1/public/requests/${requestId}`,
      ]) {
        const res = await app.inject({ method: 'GET', url })
        assert.ok(res.statusCode < 500, `${url}: ${res.statusCode}`)
      }
      const text = logs.text()
      assert.ok(text.includes(`"/s/${shareId.slice(0, 4)}…`), 'the share page is logged, by a prefix')
      assert.ok(text.includes(`"/r/${requestId.slice(0, 4)}…`), 'the request page is logged, by a prefix')
      assert.ok(!text.includes(shareId), "the share link's public id is not logged")
      assert.ok(!text.includes(requestId), "the file request's public id is not logged")
    })
  },
  { logger: logs.logger },
)
