import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { LIMITS } from '../src/resources/service-info/capabilities.ts'
import { call, describeEachEngine } from './support/harness.ts'

type Schema = Record<string, any>
type Operation = {
  summary?: string
  tags?: string[]
  security?: Record<string, string[]>[]
  parameters?: { name: string; in: string; required?: boolean; schema: Schema }[]
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>
}
type Document = {
  openapi: string
  info: { version: string }
  servers: { url: string }[]
  tags: { name: string }[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, Schema> }
}

const one = (scope: string) => [{ bearer: [scope] }]
const either = (a: string, b: string) => [{ bearer: [a] }, { bearer: [b] }]

/** Every operation of the contract with the security it must declare (README, "Authentication and scopes"). */
const SPEC_OPERATIONS: [string, string, Record<string, string[]>[]][] = [
  ['get', '/', []],
  ['get', '/files', one('files:read')],
  ['post', '/files', one('files:write')],
  ['delete', '/files', one('files:write')],
  ['get', '/files/{fileId}', one('files:read')],
  ['patch', '/files/{fileId}', one('files:write')],
  ['delete', '/files/{fileId}', one('files:write')],
  ['get', '/files/uploads/{intentId}', one('files:write')],
  ['get', '/files/{fileId}/download', one('files:read')],
  ['get', '/shares', one('shares:read')],
  ['post', '/shares', one('shares:write')],
  ['get', '/shares/{shareId}', one('shares:read')],
  ['patch', '/shares/{shareId}', one('shares:write')],
  ['get', '/requests', one('requests:read')],
  ['post', '/requests', one('requests:write')],
  ['get', '/requests/{requestId}', one('requests:read')],
  ['patch', '/requests/{requestId}', one('requests:write')],
  ['get', '/requests/{requestId}/submissions', one('requests:read')],
  ['get', '/folders', either('folders:read', 'files:read')],
  ['post', '/folders', either('folders:write', 'files:write')],
  ['get', '/folders/{folderId}', either('folders:read', 'files:read')],
  ['patch', '/folders/{folderId}', either('folders:write', 'files:write')],
  ['delete', '/folders/{folderId}', either('folders:write', 'files:write')],
  ['get', '/analytics', one('analytics:read')],
]

const ERROR_STATUSES = ['400', '401', '403', '404', '409', '429']

function operations(doc: Document): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, op })),
  )
}

/** `{ min, max }` of a value's length, size, item count or number, looking through `T | null`. */
function boundsOf(schema: Schema | undefined): { min?: number; max?: number } {
  assert.ok(schema, 'no schema')
  const s = (schema.anyOf ?? [schema]).find((branch: Schema) => branch.type !== 'null') ?? schema
  return {
    min: s.minLength ?? s.minimum ?? s.minItems,
    max: s.maxLength ?? s.maximum ?? s.maxItems,
  }
}

function bodyField(op: Operation, path: string): Schema | undefined {
  let schema: Schema | undefined = op.requestBody?.content['application/json']?.schema
  for (const part of path.split('.')) {
    if (!schema) return undefined
    schema = part === '[]' ? schema.items : schema.properties?.[part]
  }
  return schema
}

async function fetchDocument(app: Parameters<typeof call>[0]): Promise<Document> {
  const res = await call(app, 'GET', '/api/v1/openapi.json')
  assert.equal(res.status, 200)
  return res.body
}

describeEachEngine('OpenAPI document', (ctx) => {
  test('is a valid OpenAPI 3.1 document with version 1.0.0, a bearer scheme and this server', async () => {
    const { app, config } = ctx()
    const doc = await fetchDocument(app)
    const result = await new Validator().validate(structuredClone(doc))
    assert.deepEqual(result.errors, undefined)
    assert.equal(result.valid, true)
    const broken = structuredClone(doc) as Partial<Document>
    delete broken.info
    assert.equal((await new Validator().validate(broken)).valid, false, 'the validator really validates')
    assert.match(doc.openapi, /^3\.1\.\d+$/)
    assert.equal(doc.info.version, '1.0.0')
    assert.deepEqual(
      doc.servers.map((s) => s.url),
      [`${config.publicUrl}/api/v1`],
    )
    const { description, ...bearer } = doc.components.securitySchemes.bearer as Record<string, string>
    assert.deepEqual(bearer, { type: 'http', scheme: 'bearer' })
    assert.match(description ?? '', /API key/)
    assert.ok(doc.components.schemas.Error, 'the Error schema is a component')
  })

  test('every operation has a summary, a declared tag, known scopes and the error responses', async () => {
    const doc = await fetchDocument(ctx().app)
    const tags = new Set(doc.tags.map((t) => t.name))
    const ops = operations(doc)
    assert.ok(ops.length > 0)
    for (const { method, path, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`
      assert.ok(op.summary && op.summary.length > 0, `${where}: summary`)
      assert.ok(op.tags && op.tags.length > 0, `${where}: tags`)
      for (const tag of op.tags) assert.ok(tags.has(tag), `${where}: tag ${tag} is not declared`)
      if (method === 'get' && path === '/') {
        assert.deepEqual(op.security, [], 'the index needs no credential')
        continue
      }
      // A file request's public API: no credential, the public id is the capability.
      if (path.startsWith('/public/')) {
        assert.deepEqual(op.security, [], `${where}: a public operation declares no credential`)
        assert.deepEqual(op.tags, ['public requests'], `${where}: tag`)
        for (const status of ['400', '404', '429']) {
          assert.deepEqual(
            op.responses[status]?.content?.['application/json']?.schema,
            { $ref: '#/components/schemas/Error' },
            `${where}: ${status} must reference the Error schema`,
          )
        }
        continue
      }
      assert.ok(op.security && op.security.length > 0, `${where}: security`)
      for (const requirement of op.security) {
        assert.deepEqual(Object.keys(requirement), ['bearer'], `${where}: security scheme`)
        assert.ok((requirement.bearer ?? []).length > 0, `${where}: an empty scope list would allow anyone`)
        for (const scope of requirement.bearer ?? []) {
          assert.ok((ALL_SCOPES as string[]).includes(scope), `${where}: unknown scope ${scope}`)
        }
      }
      for (const status of ERROR_STATUSES) {
        assert.deepEqual(
          op.responses[status]?.content?.['application/json']?.schema,
          { $ref: '#/components/schemas/Error' },
          `${where}: ${status} must reference the Error schema`,
        )
      }
    }
  })

  test('error responses describe their codes and document WWW-Authenticate and Retry-After', async () => {
    const doc = await fetchDocument(ctx().app)
    const responses: Record<string, any> = doc.paths['/folders']?.get?.responses ?? {}
    const created: Record<string, any> = doc.paths['/folders']?.post?.responses ?? {}
    assert.match(responses['400'].description, /invalid_request/)
    assert.match(responses['401'].description, /unauthorized/)
    assert.match(responses['403'].description, /insufficient_scope/)
    assert.match(responses['404'].description, /not_found/)
    assert.match(responses['409'].description, /conflict/)
    assert.match(responses['429'].description, /rate_limited/)
    assert.deepEqual(Object.keys(responses['401'].headers), ['WWW-Authenticate'])
    assert.deepEqual(Object.keys(responses['429'].headers), ['Retry-After'])
    assert.equal(responses['200'].description, 'OK')
    assert.equal(created['201'].description, 'Created')
    // `default` names every code the operation does not list by status.
    const other = responses.default.description
    for (const code of ['payload_too_large', 'unsupported_media_type', 'internal_error', 'unavailable']) {
      assert.match(other, new RegExp(code))
    }
    assert.doesNotMatch(other, /invalid_request|rate_limited/)
  })

  // Most of these operations are built on other branches: this passes once they are all merged.
  test('every operation of the contract exists with the scopes it requires', async () => {
    const doc = await fetchDocument(ctx().app)
    const missing = SPEC_OPERATIONS.filter(([method, path]) => !doc.paths[path]?.[method]).map(
      ([method, path]) => `${method.toUpperCase()} ${path}`,
    )
    assert.deepEqual(missing, [], `operations missing from the OpenAPI document: ${missing.join(', ')}`)
    for (const [method, path, security] of SPEC_OPERATIONS) {
      assert.deepEqual(
        doc.paths[path]?.[method]?.security,
        security,
        `${method.toUpperCase()} ${path}: security`,
      )
    }
  })

  test('pages, probes and the document itself are not part of the contract', async () => {
    const doc = await fetchDocument(ctx().app)
    for (const path of Object.keys(doc.paths)) {
      assert.doesNotMatch(path, /openapi|healthz|readyz|docs|^\/api\//, path)
    }
  })

  // The index announces these bounds; the schemas enforce them. Operations not (yet) in the document are
  // covered by the test above.
  test('the bounds the capability index announces are the ones the schemas enforce', async () => {
    const { app, config } = ctx()
    const doc = await fetchDocument(app)
    let checked = 0
    const expect = (
      where: string,
      schema: Schema | undefined,
      min: number | undefined,
      max: number | undefined,
    ) => {
      assert.deepEqual(boundsOf(schema), { min, max }, where)
      checked++
    }
    const range = (r: { min: number; max: number }) => [r.min, r.max] as const
    for (const { method, path, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`
      for (const p of op.parameters ?? []) {
        const at = `${where} ${p.in} ${p.name}`
        if (p.in === 'path') {
          expect(at, p.schema, ...range(p.name === 'folderId' ? LIMITS.folderIdLength : LIMITS.idLength))
        } else if (p.name === 'limit') {
          expect(at, p.schema, LIMITS.pageSize.min, LIMITS.pageSize.max)
          const byDefault = path === '/files' ? LIMITS.pageSize.filesDefault : LIMITS.pageSize.default
          assert.equal(p.schema.default, byDefault, `${at} default`)
        } else if (p.name === 'cursor') {
          expect(at, p.schema, undefined, LIMITS.cursorMaxLength)
        } else if (p.name === 'query') {
          expect(at, p.schema, ...range(LIMITS.searchQueryLength))
        } else if (p.name === 'folderId') {
          expect(at, p.schema, ...range(LIMITS.folderIdLength))
        } else if (p.name === 'shareId') {
          expect(at, p.schema, ...range(LIMITS.idLength))
        }
      }
      const fields: Record<string, [string, number | undefined, number | undefined][]> = {
        'post /files': [
          ['files', ...range(LIMITS.filesPerUpload)],
          ['files.[].name', ...range(LIMITS.fileNameLength)],
          ['files.[].type', ...range(LIMITS.fileTypeLength)],
          ['folderId', ...range(LIMITS.folderIdLength)],
        ],
        'delete /files': [
          ['fileIds', ...range(LIMITS.fileIdsPerDelete)],
          ['fileIds.[]', ...range(LIMITS.idLength)],
        ],
        'patch /files/{fileId}': [
          ['name', ...range(LIMITS.fileNameLength)],
          ['folderId', ...range(LIMITS.folderIdLength)],
        ],
        'post /folders': [['name', ...range(LIMITS.folderNameLength)]],
        'patch /folders/{folderId}': [['name', ...range(LIMITS.folderNameLength)]],
        'post /shares': [['fileId', ...range(LIMITS.idLength)]],
        'post /requests': [
          ['title', ...range(LIMITS.requestTitleLength)],
          ['description', undefined, LIMITS.requestDescriptionMaxLength],
          ['folderId', ...range(LIMITS.folderIdLength)],
        ],
        'patch /requests/{requestId}': [
          ['title', ...range(LIMITS.requestTitleLength)],
          ['description', undefined, LIMITS.requestDescriptionMaxLength],
          ['folderId', ...range(LIMITS.folderIdLength)],
        ],
      }
      for (const [field, min, max] of fields[`${method} ${path}`] ?? []) {
        expect(`${where} body ${field}`, bodyField(op, field), min, max)
      }
      if (method === 'post' && path === '/files') {
        // The largest size may be enforced by the schema or by the service; either way it is the configured one.
        const size = boundsOf(bodyField(op, 'files.[].size'))
        assert.equal(size.min, 1, `${where} body files[].size`)
        assert.ok(size.max === undefined || size.max === config.maxFileSize, `${where} body files[].size max`)
      }
    }
    // At least the folder operations' bounds, which this branch always has.
    assert.ok(checked >= 5, `only ${checked} bounds were found to check`)
  })
})
