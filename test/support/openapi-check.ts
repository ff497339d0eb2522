// Validates a response against the app's own OpenAPI document: the operation must be documented for
// that status, and the body must match its schema. Catches any drift between what the API says and does.
import assert from 'node:assert/strict'
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { App } from '../../src/app.ts'

interface Checker {
  operations: { method: string; pattern: RegExp; path: string }[]
  validators: Map<string, ValidateFunction>
  ajv: Ajv2020
}

const checkers = new WeakMap<App, Checker>()

function checkerFor(app: App): Checker {
  let checker = checkers.get(app)
  if (checker) return checker
  const doc = app.swagger() as { paths: Record<string, Record<string, unknown>>; servers: { url: string }[] }
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema(doc as object, 'openapi')
  const base = new URL(doc.servers[0]?.url ?? 'http://x/api/v1').pathname.replace(/\/$/, '')
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => ({
      method: method.toUpperCase(),
      path,
      pattern: new RegExp(`^${base}${path.replace(/\{[^}]+\}/g, '[^/]+').replace(/\/$/, '')}/?$`),
    })),
  )
  checker = { operations, validators: new Map(), ajv }
  checkers.set(app, checker)
  return checker
}

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

export async function checkResponseAgainstOpenApi(
  app: App,
  method: string,
  url: string,
  status: number,
  body: unknown,
): Promise<void> {
  const checker = checkerFor(app)
  const pathname = url.split('?')[0] ?? url
  const verb = method === 'HEAD' ? 'GET' : method.toUpperCase()
  // Prefer literal paths over templated ones (/files/uploads/x before /files/{fileId}).
  const candidates = checker.operations.filter((o) => o.method === verb && o.pattern.test(pathname))
  const operation = candidates.sort(
    (a, b) => (a.path.match(/\{/g)?.length ?? 0) - (b.path.match(/\{/g)?.length ?? 0),
  )[0]
  if (!operation) return // not part of the REST contract (pages, health checks, unknown routes)
  const key = `${operation.method} ${operation.path} ${status}`
  let validate = checker.validators.get(key)
  if (!validate) {
    const doc = app.swagger() as {
      paths: Record<string, Record<string, { responses?: Record<string, any> }>>
    }
    const responses = doc.paths[operation.path]?.[operation.method.toLowerCase()]?.responses ?? {}
    // A status without its own entry falls under `default`, which only failures may use.
    const documented =
      String(status) in responses
        ? String(status)
        : status >= 400 && 'default' in responses
          ? 'default'
          : undefined
    assert.ok(documented, `${key}: status ${status} is not documented in the OpenAPI document`)
    const ref = `openapi#/${pointer('paths', operation.path, operation.method.toLowerCase(), 'responses', documented, 'content', 'application/json', 'schema')}`
    validate = checker.ajv.compile({ $ref: ref })
    checker.validators.set(key, validate)
  }
  if (!validate(body)) {
    assert.fail(
      `${key}: response does not match the OpenAPI document: ${checker.ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    )
  }
}

/** Validates an event a webhook received against the OpenAPI document's `webhooks` entry for its type. */
export function checkEventAgainstOpenApi(app: App, event: { type: string }): void {
  const checker = checkerFor(app)
  const key = `webhook ${event.type}`
  let validate = checker.validators.get(key)
  if (!validate) {
    const ref = `openapi#/${pointer('webhooks', event.type, 'post', 'requestBody', 'content', 'application/json', 'schema')}`
    validate = checker.ajv.compile({ $ref: ref })
    checker.validators.set(key, validate)
  }
  if (!validate(event)) {
    assert.fail(
      `${key}: event does not match the OpenAPI document: ${checker.ajv.errorsText(validate.errors)}\n${JSON.stringify(event)}`,
    )
  }
}
