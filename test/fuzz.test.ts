// Every operation of the OpenAPI document, fuzzed with fast-check (seeded, so a failure replays): path
// parameters from real ids to hostile text, query parameters and JSON bodies made from the operation's own
// schemas at and past their bounds, or anything JSON at all, with a good, a wrong or no credential. Whatever
// comes in, no answer may be a 5xx, every error must be the envelope, and every JSON answer must match the
// document (`call` checks both).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { call, createAccount, createFile, describeEachEngine } from './support/harness.ts'
import { newFolder, newRequest, publicIdOf } from './support/requests-helpers.ts'

/** Runs per operation and engine: about 1,500 requests per engine in all. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 45)
const SEED = 20261125

type Schema = Record<string, any>

interface Operation {
  method: string
  path: string
  parameters: { name: string; in: string; schema: Schema }[]
  body: Schema | undefined
}

function operationsOf(doc: Schema): Operation[] {
  return Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => method !== 'head')
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.['application/json']?.schema,
      })),
  )
}

/** Values for a schema: mostly within it and at its edges, sometimes just past them. */
function valuesOf(schema: Schema, doc: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref)
    return valuesOf(doc.components.schemas[String(schema.$ref).split('/').pop() as string], doc, depth)
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]))
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) return fc.oneof(...(alternatives as Schema[]).map((s) => valuesOf(s, doc, depth)))
  if (depth > 3) return fc.constant(null)
  switch (schema.type) {
    case 'string':
      if (schema.format === 'date-time') {
        return fc.oneof(
          fc
            .date({ min: new Date(0), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
            .map((d) => d.toISOString()),
          fc.constantFrom('2026-13-01T00:00:00Z', '9999-12-31T23:59:60Z', 'tomorrow'),
        )
      }
      return fc.string({
        unit: fc.oneof(
          fc.constant('a'),
          fc.constant(' '),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
          fc.constantFrom('\u0000', '\uD800', '<', '"'),
        ),
        minLength: Math.max(0, (schema.minLength ?? 0) - 1),
        maxLength: Math.min((schema.maxLength ?? 40) + 1, 1100),
      })
    case 'integer':
      return fc.integer({
        min: (schema.minimum ?? -1_000_000) - 1,
        max: Math.min((schema.maximum ?? 1_000_000) + 1, 2 ** 53 - 1),
      })
    case 'number':
      return fc.double()
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(valuesOf(schema.items ?? {}, doc, depth + 1), {
        maxLength: Math.min((schema.maxItems ?? 4) + 1, 6),
      })
    case 'object': {
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>)
      const record = fc.record(
        Object.fromEntries(properties.map(([name, s]) => [name, valuesOf(s, doc, depth + 1)])),
        {
          requiredKeys: [],
        },
      )
      return fc.oneof(
        { weight: 5, arbitrary: record },
        { weight: 1, arbitrary: record.map((r) => ({ ...r, unexpected: 1 })) },
      )
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** Text for a path or query: percent-encoded when it is text, raw when it is broken percent-encoding. */
const encoded = (value: unknown) => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '')
  if (!text.isWellFormed()) return '%ED%A0%80'
  const component = encodeURIComponent(text)
  // A lone dot segment would be normalized away (see realIds).
  return component === '.' || component === '..' ? `x${component}` : component
}

describeEachEngine(
  'fuzzing every operation',
  (ctx) => {
    test(`${RUNS} requests per operation: no 5xx, every error in the envelope, every answer as documented`, async () => {
      const { app } = ctx()
      const doc = app.swagger() as Schema
      const a = await createAccount(app)
      const file = await createFile(ctx(), a.id)
      const folder = await newFolder(app, a.token)
      const request = await newRequest(app, a.token)
      const share = (await call(app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } }))
        .body.data
      const realIds = [
        file.id,
        folder.id,
        request.id,
        share.id,
        publicIdOf(request),
        // No dot segments: an injected request's URL is normalized as a browser's is (`/files/..` is `/`),
        // so the answer would be another operation's. Over HTTP Coffer routes them as ids (a 404).
        'fil_absent',
        '%00',
        '%FF',
      ]
      const tokens = fc.oneof(
        { weight: 8, arbitrary: fc.constant<string | undefined>(a.token) },
        { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
        { weight: 1, arbitrary: fc.constant<string | undefined>('coffer_wrong') },
      )
      let requests = 0
      const operations = operationsOf(doc)
      assert.ok(operations.length >= 30)
      for (const op of operations) {
        const pathParams = op.parameters.filter((p) => p.in === 'path')
        const queryParams = op.parameters.filter((p) => p.in === 'query')
        const arbitrary = fc.record({
          path: fc.tuple(
            ...pathParams.map(() =>
              fc.oneof(
                { weight: 3, arbitrary: fc.constantFrom(...realIds) },
                {
                  weight: 1,
                  arbitrary: fc
                    .string({
                      unit: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
                      maxLength: 140,
                    })
                    .map(encoded),
                },
              ),
            ),
          ),
          query: fc.tuple(...queryParams.map((p) => fc.option(valuesOf(p.schema, doc), { nil: undefined }))),
          extra: fc.option(fc.constantFrom('junk=1', 'limit=1&limit=2', 'query=%FF'), {
            freq: 5,
            nil: undefined,
          }),
          body: op.body
            ? fc.oneof(
                { weight: 4, arbitrary: valuesOf(op.body, doc) },
                { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
              )
            : fc.constant(undefined),
          token: tokens,
        })
        await fc.assert(
          fc.asyncProperty(arbitrary, async (input) => {
            let url = `/api/v1${op.path === '/' ? '/' : op.path}`
            pathParams.forEach((p, i) => {
              url = url.replace(`{${p.name}}`, String(input.path[i]))
            })
            const query = queryParams
              .map((p, i) =>
                input.query[i] === undefined ? undefined : `${p.name}=${encoded(input.query[i])}`,
              )
              .filter(Boolean)
            if (input.extra) query.push(input.extra)
            if (query.length > 0) url += `?${query.join('&')}`
            requests++
            const res = await call(app, op.method, url, { token: input.token, body: input.body })
            assert.ok(res.status < 500, `${op.method} ${url}: ${res.status} ${JSON.stringify(res.body)}`)
          }),
          { seed: SEED, numRuns: RUNS, endOnFailure: true },
        )
      }
      assert.ok(requests >= operations.length * RUNS)
    })
  },
  { env: { RATE_LIMIT_MAX: '1000000' } },
)
