import assert from 'node:assert/strict'
import { rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, test } from 'node:test'
import { AUDIT_KINDS } from '../src/platform/audit/audit-kinds.ts'
import type { Config } from '../src/platform/config.ts'
import { EVENTS } from '../src/resources/webhooks/event-types.ts'
import { assertError, call, captureLogs, describeEachEngine, ENGINES, startApp } from './support/harness.ts'

// Settings away from their defaults, so that the index is seen to follow the configuration.
const ENV = {
  PUBLIC_URL: 'https://files.example.org',
  RATE_LIMIT_MAX: '42',
  RATE_LIMIT_WINDOW_SECONDS: '30',
  MAX_FILE_SIZE: '1000000',
  UPLOAD_GRANT_TTL_SECONDS: '120',
}

/** The index of a server with no account yet (the first-run setup pending) unless `setupPending` is false. */
function expectedIndex(config: Config, setupPending = true) {
  const base = `${config.publicUrl}/api/v1`
  const oauthMetadata = `${config.publicUrl}/.well-known/oauth-authorization-server`
  return {
    name: 'Coffer',
    version: '0.1.0',
    apiVersion: 'v1',
    links: {
      self: `${base}/`,
      openapi: `${base}/openapi.json`,
      docs: `${config.publicUrl}/docs`,
      oauthAuthorizationServer: oauthMetadata,
    },
    authentication: {
      schemes: ['bearer-api-key', 'bearer-oauth-token'],
      apiKeys: { header: 'Authorization', scheme: 'Bearer', prefix: 'coffer_' },
      oauth: {
        metadata: oauthMetadata,
        resource: base,
        protectedResourceMetadata: `${config.publicUrl}/.well-known/oauth-protected-resource/api/v1`,
      },
    },
    ...(setupPending
      ? {
          setup: {
            pending: true,
            message:
              'No account exists yet: open the one-time setup link the server printed at start to create the first one.',
          },
        }
      : {}),
    scopes: [
      { name: 'files:read', description: 'View files, their contents and metadata' },
      { name: 'files:write', description: 'Upload, rename, move and delete files' },
      { name: 'folders:read', description: 'View folders and their resource counts' },
      { name: 'folders:write', description: 'Create, rename and delete folders' },
      { name: 'shares:read', description: 'View share links' },
      { name: 'shares:write', description: 'Create, update and disable share links' },
      { name: 'requests:read', description: 'View file requests and submissions' },
      { name: 'requests:write', description: 'Create, update, move and disable file requests' },
      { name: 'analytics:read', description: 'View share analytics' },
      { name: 'webhooks:read', description: 'View webhook endpoints and their deliveries' },
      {
        name: 'webhooks:write',
        description: 'Create, change and delete webhook endpoints, and send test events',
      },
      {
        name: 'audit:read',
        description: "Read the account's activity: sign-ins, keys, links, deletions and other changes",
      },
    ],
    limits: {
      pageSize: { min: 1, max: 100, default: 25, filesDefault: 50 },
      cursorMaxLength: 128,
      searchQueryLength: { min: 1, max: 200 },
      filesPerUpload: { min: 1, max: 100 },
      fileIdsPerDelete: { min: 1, max: 100 },
      fileNameLength: { min: 1, max: 255 },
      fileTypeLength: { min: 1, max: 255 },
      fileSize: { min: 1, max: config.maxFileSize },
      folderNameLength: { min: 1, max: 80 },
      requestTitleLength: { min: 3, max: 100 },
      requestDescriptionMaxLength: 500,
      folderIdLength: { min: 1, max: 100 },
      idLength: { min: 1, max: 128 },
      jsonBodyBytes: 1024 * 1024,
      rateLimit: { max: config.rateLimit.max, windowSeconds: config.rateLimit.windowMs / 1000 },
    },
    uploads: {
      blobApiUrl: `${config.publicUrl}/blob`,
      blobApiUrlEnv: 'VERCEL_BLOB_API_URL',
      clientLibrary: '@vercel/blob',
      access: 'private',
      multipartThresholdBytes: 5 * 1024 * 1024,
      grantTtlSeconds: config.uploadGrantTtlSeconds,
      grantMinLength: 32,
    },
    quotas: { usageUrl: `${base}/usage`, defaultQuotaBytes: null },
    trash: { retentionDays: 30 },
    audit: {
      url: `${base}/audit`,
      retentionDays: 365,
      kinds: Object.entries(AUDIT_KINDS).map(([name, kind]) => ({ name, description: kind.about })),
    },
    webhooks: {
      events: [
        {
          name: 'file.created',
          description: 'A file was made: an upload completed, or a file request received it.',
        },
        { name: 'file.trashed', description: EVENTS['file.trashed'].about },
        { name: 'file.restored', description: EVENTS['file.restored'].about },
        { name: 'file.deleted', description: EVENTS['file.deleted'].about },
        {
          name: 'share.created',
          description: 'A share link was created for a file, or a disabled or expired one reactivated.',
        },
        {
          name: 'share.viewed',
          description:
            "A share link's page was viewed, as its view count counts: the link with its counts including this view.",
        },
        {
          name: 'share.downloaded',
          description:
            "A share link's file was downloaded, as its download count counts: the link with its counts including this download.",
        },
        { name: 'folder_share.created', description: EVENTS['folder_share.created'].about },
        { name: 'folder_share.viewed', description: EVENTS['folder_share.viewed'].about },
        { name: 'folder_share.downloaded', description: EVENTS['folder_share.downloaded'].about },
        {
          name: 'submission.received',
          description: 'A file request received a file: the request and the Submission.',
        },
        {
          name: 'request.closed',
          description:
            'A file request stopped accepting files: its owner disabled it, it received as many files as it allows, or its deadline passed.',
        },
      ],
      signatures: 'standard-webhooks',
      timeoutSeconds: 10,
      retryWindowSeconds: 3 * 24 * 3600,
      privateTargets: false,
    },
  }
}

describeEachEngine(
  'meta',
  (ctx) => {
    test('the capability index lists links, authentication, scopes, limits and uploads from the config', async () => {
      const { app, config } = ctx()
      assert.deepEqual(
        [config.maxFileSize, config.rateLimit, config.uploadGrantTtlSeconds],
        [1_000_000, { max: 42, windowMs: 30_000 }, 120],
      )
      const res = await call(app, 'GET', '/api/v1/')
      assert.equal(res.status, 200)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      assert.deepEqual(res.body, expectedIndex(config))
      assert.equal(res.body.uploads.blobApiUrl, 'https://files.example.org/blob')
      assert.equal(res.body.uploads.blobApiUrl, `${config.publicUrl}/blob`)
      // Without the trailing slash too.
      assert.deepEqual((await call(app, 'GET', '/api/v1')).body, res.body)
    })

    test('the capability index ignores credentials, even bad ones', async () => {
      const { app, config } = ctx()
      for (const authorization of ['Bearer coffer_not-a-real-key', 'Basic dXNlcjpwYXNz', 'garbage']) {
        const res = await call(app, 'GET', '/api/v1/', { headers: { authorization } })
        assert.equal(res.status, 200, authorization)
        assert.deepEqual(res.body, expectedIndex(config))
        assert.equal(res.headers['www-authenticate'], undefined)
      }
    })

    test('GET /api/v1/openapi.json serves the document as JSON without a credential', async () => {
      const { app } = ctx()
      const res = await call(app, 'GET', '/api/v1/openapi.json')
      assert.equal(res.status, 200)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      assert.deepEqual(res.body, JSON.parse(JSON.stringify(app.swagger())))
      assert.equal(res.body.info.title, 'Coffer API')
      assert.equal(res.body.paths['/'].get.summary, 'Capability index')
    })

    test('liveness and readiness', async () => {
      const { app } = ctx()
      const live = await call(app, 'GET', '/healthz')
      assert.equal(live.status, 200)
      assert.deepEqual(live.body, { status: 'ok' })
      assert.equal(live.headers['cache-control'], 'no-store')
      const ready = await call(app, 'GET', '/readyz')
      assert.equal(ready.status, 200)
      assert.deepEqual(ready.body, { status: 'ready', checks: { database: 'ok', blobStore: 'ok' } })
      assert.equal(ready.headers['cache-control'], 'no-store')
    })

    test('unknown paths next to the meta routes are 404 in the envelope', async () => {
      const { app } = ctx()
      assertError(await call(app, 'GET', '/api/v1/nope'), 404, 'not_found')
      assertError(await call(app, 'POST', '/api/v1/'), 404, 'not_found')
    })
  },
  { env: ENV },
)

for (const engine of ENGINES) {
  describe(`readiness failures [${engine}]`, () => {
    test('a blob store that cannot be written makes /readyz 503, and it recovers', async () => {
      const log = captureLogs('warn')
      const c = await startApp(engine, { logger: log.logger })
      try {
        // The store breaks: the blob root becomes a plain file, or the bucket goes.
        const root = path.join(c.dataDir, 'blobs')
        const bucket = c.bucket
        if (bucket) {
          await bucket.drop()
        } else {
          await rm(root, { recursive: true, force: true })
          await writeFile(root, 'not a directory')
        }
        const down = await call(c.app, 'GET', '/readyz')
        assert.equal(
          assertError(down, 503, 'unavailable'),
          'Not ready: blobStore unavailable.',
          'the cause stays out of the response',
        )
        assert.equal(down.headers['cache-control'], 'no-store')
        const logged = log.lines().find((l) => l.msg === 'not ready')
        assert.ok(logged, 'the failure is logged')
        assert.deepEqual(Object.keys(logged.failures), ['blobStore'])
        assert.match(logged.failures.blobStore, /ENOTDIR|EEXIST|not a directory|NoSuchBucket/i)
        assert.equal((await call(c.app, 'GET', '/healthz')).status, 200, 'liveness checks no dependency')

        if (bucket) await bucket.create()
        else await rm(root)
        assert.equal((await call(c.app, 'GET', '/readyz')).status, 200)
      } finally {
        await c.stop()
      }
    })

    test('a closed database makes /readyz 503', async () => {
      const c = await startApp(engine)
      try {
        assert.equal((await call(c.app, 'GET', '/readyz')).status, 200)
        await c.db.close()
        const down = await call(c.app, 'GET', '/readyz')
        assert.equal(assertError(down, 503, 'unavailable'), 'Not ready: database unavailable.')
        assert.equal((await call(c.app, 'GET', '/healthz')).status, 200)
      } finally {
        await c.stop()
      }
    })
  })
}

describeEachEngine('capability index and the first-run setup', (ctx) => {
  test('says setup is pending until the first account exists, then never again', async () => {
    const { app, config } = ctx()
    assert.deepEqual((await call(app, 'GET', '/api/v1/')).body, expectedIndex(config, true))
    await app.services.accounts.create({ email: 'first@example.com' })
    assert.deepEqual((await call(app, 'GET', '/api/v1/')).body, expectedIndex(config, false))
  })
})
