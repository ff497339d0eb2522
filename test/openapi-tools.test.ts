// The served OpenAPI document reads well to the tools clients use: Redocly's linter with its recommended
// rules, and openapi-typescript, whose types the client of examples/typed-client.ts (written with
// openapi-fetch, shown in the README) compiles against, and with which it then works.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { createAccount, ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '..')
const example = path.join(root, 'examples', 'typed-client.ts')

/** Warnings of `redocly lint --extends recommended` that the README justifies ("The OpenAPI document"). */
const JUSTIFIED_WARNINGS = ['info-license', 'no-ambiguous-paths', 'no-server-example.com']

/** Every operation's operationId: clients generated from the document name their methods after them. */
const OPERATION_IDS = {
  'get /': 'getCapabilities',
  'get /files': 'listFiles',
  'post /files': 'prepareUploads',
  'delete /files': 'deleteFiles',
  'get /files/uploads/{intentId}': 'getUploadStatus',
  'get /files/{fileId}': 'getFile',
  'patch /files/{fileId}': 'updateFile',
  'delete /files/{fileId}': 'deleteFile',
  'get /files/{fileId}/download': 'downloadFile',
  'head /files/{fileId}/download': 'downloadFile-head',
  'get /files/{fileId}/preview': 'getFilePreview',
  'get /usage': 'getUsage',
  'get /trash': 'listTrash',
  'delete /trash': 'emptyTrash',
  'post /trash/{fileId}/restore': 'restoreFile',
  'delete /trash/{fileId}': 'deleteFromTrash',
  'get /folders': 'listFolders',
  'post /folders': 'createFolder',
  'get /folders/{folderId}': 'getFolder',
  'patch /folders/{folderId}': 'renameFolder',
  'delete /folders/{folderId}': 'deleteFolder',
  'get /shares': 'listShares',
  'post /shares': 'createShare',
  'get /shares/{shareId}': 'getShare',
  'patch /shares/{shareId}': 'updateShare',
  'get /folder-shares': 'listFolderShares',
  'post /folder-shares': 'createFolderShare',
  'get /folder-shares/{shareId}': 'getFolderShare',
  'patch /folder-shares/{shareId}': 'updateFolderShare',
  'get /requests': 'listRequests',
  'post /requests': 'createRequest',
  'get /requests/{requestId}': 'getRequest',
  'patch /requests/{requestId}': 'updateRequest',
  'get /requests/{requestId}/submissions': 'listSubmissions',
  'get /requests/{requestId}/limits': 'getRequestLimits',
  'put /requests/{requestId}/limits': 'setRequestLimits',
  'get /public/requests/{publicId}': 'getPublicRequest',
  'post /public/requests/{publicId}/uploads': 'preparePublicUploads',
  'post /public/requests/{publicId}/uploads/status': 'getPublicUploadStatus',
  'post /public/requests/{publicId}/uploads/cancel': 'cancelPublicUploads',
  'get /analytics': 'getAnalytics',
  'get /analytics/daily': 'getDailyAnalytics',
  'get /analytics/top-shares': 'getTopShares',
  'get /webhooks': 'listWebhooks',
  'post /webhooks': 'createWebhook',
  'get /webhooks/{webhookId}': 'getWebhook',
  'patch /webhooks/{webhookId}': 'updateWebhook',
  'delete /webhooks/{webhookId}': 'deleteWebhook',
  'post /webhooks/{webhookId}/rotate-secret': 'rotateWebhookSecret',
  'post /webhooks/{webhookId}/ping': 'pingWebhook',
  'get /webhooks/{webhookId}/deliveries': 'listWebhookDeliveries',
  'post /webhooks/{webhookId}/deliveries/{deliveryId}/retry': 'retryWebhookDelivery',
  'get /audit': 'listAuditEntries',
}

/** The project's own compiler settings, for code that lives outside the project. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2024',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2024', 'dom'],
    types: ['node'],
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
  },
}

/** TypeScript 7 on the project in `dir`: its diagnostics, or '' when it compiles. */
async function typeCheck(dir: string): Promise<string> {
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG))
  const tsc = path.join(root, 'node_modules', 'typescript7', 'bin', 'tsc')
  try {
    await run(process.execPath, [tsc, '--noEmit', '-p', dir])
    return ''
  } catch (error) {
    return String((error as { stdout?: string }).stdout)
  }
}

test('the README shows examples/typed-client.ts exactly, and justifies each Redocly warning allowed', async () => {
  const readme = await readFile(path.join(root, 'README.md'), 'utf8')
  const code = await readFile(example, 'utf8')
  assert.ok(readme.includes(`\`\`\`ts\n${code}\`\`\``), 'the README shows another typed client')
  for (const rule of JUSTIFIED_WARNINGS) assert.ok(readme.includes(`\`${rule}\``), rule)
})

for (const engine of ENGINES) {
  describe(`the OpenAPI document to client tools [${engine}]`, () => {
    let ctx: ListeningContext | undefined
    let document: Record<string, any>
    // In the project (but outside node_modules, where Node strips no types), so the code there resolves
    // openapi-fetch and the Node types as the project's own code does.
    let dir = ''
    before(async () => {
      ctx = await startListening(engine)
      document = (await (await fetch(`${ctx.base}/api/v1/openapi.json`)).json()) as Record<string, any>
      await mkdir(path.join(root, '.cache'), { recursive: true })
      dir = await mkdtemp(path.join(root, '.cache', 'typed-client-'))
    })
    after(async () => {
      await ctx?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    test('every operation has its stable operationId, and the capability index declares no security', () => {
      const ids = Object.fromEntries(
        Object.entries(document.paths as Record<string, Record<string, { operationId?: string }>>).flatMap(
          ([url, item]) => Object.entries(item).map(([method, op]) => [`${method} ${url}`, op.operationId]),
        ),
      )
      assert.deepEqual(ids, OPERATION_IDS)
      assert.deepEqual(document.paths['/'].get.security, [])
    })

    test('Redocly lint, recommended rules: no error, and only the warnings the README justifies', async () => {
      const file = path.join(dir, 'openapi.json')
      await writeFile(file, JSON.stringify(document))
      const cli = path.join(root, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js')
      const { stdout } = await run(
        process.execPath,
        [cli, 'lint', file, '--extends', 'recommended', '--format', 'json'],
        { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
      )
      const report = JSON.parse(stdout) as {
        totals: { errors: number }
        problems: { ruleId: string; severity: string; message: string }[]
      }
      assert.equal(report.totals.errors, 0, JSON.stringify(report.problems))
      const unexplained = report.problems.filter((p) => !JUSTIFIED_WARNINGS.includes(p.ruleId))
      assert.deepEqual(unexplained, [])
    })

    test('openapi-typescript types: the typed client compiles, a wrong call does not, and the client works', async () => {
      assert.ok(ctx)
      await writeFile(
        path.join(dir, 'coffer-api.d.ts'),
        astToString(await openapiTS(structuredClone(document) as OpenAPI3)),
      )
      await copyFile(example, path.join(dir, 'typed-client.ts'))
      assert.equal(await typeCheck(dir), '')

      // The types bind: a query parameter of the wrong type and a body field the API does not take.
      await writeFile(
        path.join(dir, 'wrong.ts'),
        `import createClient from 'openapi-fetch'
import type { paths } from './coffer-api.d.ts'
const client = createClient<paths>({ baseUrl: 'http://localhost' })
await client.GET('/files', { params: { query: { limit: 'ten' } } })
await client.POST('/folders', { body: { name: 5 } })
`,
      )
      const diagnostics = await typeCheck(dir)
      assert.match(diagnostics, /wrong\.ts\(4,/)
      assert.match(diagnostics, /wrong\.ts\(5,/)
      await rm(path.join(dir, 'wrong.ts'))

      const account = await createAccount(ctx.app)
      const { stdout } = await run(process.execPath, [path.join(dir, 'typed-client.ts'), 'Typed'], {
        env: { PATH: process.env.PATH, COFFER_URL: ctx.base, COFFER_API_KEY: account.token },
      })
      const [folderId, fileCount] = stdout.trim().split(' ')
      const folder = await ctx.app.services.folders.get(account.id, folderId ?? '')
      assert.deepEqual([folder.name, fileCount], ['Typed', '0'])
    })
  })
}
