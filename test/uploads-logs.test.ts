// Grants and client tokens are secrets: a whole upload (single PUT and multipart, with a refusal on the way),
// logged at the most verbose level, must not show either anywhere.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { GRANT_PREFIX } from '../src/resources/uploads/uploads.service.ts'
import { captureLogs, createAccount, ENGINES } from './support/harness.ts'
import {
  type Grant,
  handshakeToken,
  type ListeningContext,
  MULTIPART_THRESHOLD,
  prepareUploads,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

for (const engine of ENGINES) {
  describe(`upload secrets stay out of the logs [${engine}]`, () => {
    const captured = captureLogs('trace')
    let ctx: ListeningContext | undefined

    before(async () => {
      ctx = await startListening(engine, {
        logger: captured.logger,
      })
      process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
      process.env.VERCEL_BLOB_RETRIES = '1'
    })
    after(async () => {
      await ctx?.stop()
    })

    test('neither the grant nor the client token appears in the logs of whole uploads', async () => {
      assert.ok(ctx)
      const account = await createAccount(ctx.app)
      const small = Buffer.from('a secret-free log, please')
      const large = randomBytes(MULTIPART_THRESHOLD + 1)
      const grants = await prepareUploads(ctx.base, account.token, [
        { name: 'small.txt', type: 'text/plain', size: small.length },
        { name: 'large.bin', type: 'application/octet-stream', size: large.length },
      ])
      const [smallGrant, largeGrant] = grants as [Grant, Grant]
      const tokens = await Promise.all(grants.map((grant) => handshakeToken(grant)))
      // A refused attempt first (wrong type), then the real transfers.
      await assert.rejects(uploadWithGrant(smallGrant, small, { contentType: 'text/html' }))
      await uploadWithGrant(smallGrant, small)
      await uploadWithGrant(largeGrant, large)
      for (const grant of grants) assert.equal((await waitForUpload(grant, account.token)).status, 'complete')

      const logs = captured.text()
      // The log is real: it saw the handshakes and the blob requests.
      for (const path of ['/api/v1/files/uploads/handshake', '/blob/?pathname=', '/blob/mpu?pathname=']) {
        assert.ok(logs.includes(path), `the log has no request to ${path}`)
      }
      for (const grant of grants) {
        const secret = grant.clientPayload.grant
        assert.ok(!logs.includes(secret), 'a grant is in the logs')
        assert.ok(
          !logs.includes(secret.slice(GRANT_PREFIX.length)),
          'the random part of a grant is in the logs',
        )
        assert.ok(!logs.includes(JSON.stringify(secret).slice(1, -1)), 'an escaped grant is in the logs')
      }
      for (const token of tokens) {
        const signed = Buffer.from(token.slice('vercel_blob_client_coffer_'.length), 'base64').toString()
        const signature = signed.split('.')[0] ?? ''
        assert.equal(signature.length, 64)
        assert.ok(!logs.includes(token), 'a client token is in the logs')
        assert.ok(
          !logs.includes(token.slice('vercel_blob_client_coffer_'.length)),
          'a token body is in the logs',
        )
        assert.ok(!logs.includes(signature), "a token's signature is in the logs")
      }
    })
  })
}
