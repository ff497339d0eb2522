// Request validation. JSON bodies are checked strictly: no type coercion, unknown properties rejected.
// Query strings and path parameters arrive as text, so there (and only there) numbers are coerced.
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import { routeSecurity } from './auth.ts'

const COMMON: Options = { allErrors: false, removeAdditional: false, useDefaults: true, strict: false }

function makeAjv(coerceTypes: boolean, sharedSchemas: Record<string, unknown>): Ajv {
  const ajv = new Ajv({ ...COMMON, coerceTypes })
  addFormats.default(ajv)
  for (const schema of Object.values(sharedSchemas)) ajv.addSchema(schema as object)
  return ajv
}

/**
 * Fastify calls this for every plugin context, with the schemas added so far (so `$ref`s resolve). Given
 * as the schema controller's factory, it replaces Fastify's default Ajv everywhere: setting a compiler on
 * the root only would be undone in any plugin that adds a schema.
 */
export function buildValidator(sharedSchemas: Record<string, unknown> = {}): FastifySchemaCompiler<unknown> {
  // Each Ajv (and its formats) is made when first needed, and each schema compiled when its route first
  // receives a request, as the serializers are built (see serialization.ts).
  const ajvs: { body?: Ajv; text?: Ajv } = {}
  const ajvFor = (part: 'body' | 'text') => {
    ajvs[part] ??= makeAjv(part === 'text', sharedSchemas)
    return ajvs[part]
  }
  return ({ schema, httpPart }) => {
    const part = httpPart === 'body' ? 'body' : 'text'
    const compile = () => ajvFor(part).compile(schema as object)
    return withTextChecks(compile, part === 'body' ? undefined : textShapes(schema))
  }
}

/**
 * The API's operations (the routes that need a credential) refuse query parameters they do not know, as the
 * lists do, so a misspelt one is a 400 rather than silently ignored: one without a query schema is given an
 * empty one.
 */
export function refuseUnknownQueryParameters(app: FastifyInstance): void {
  const none = { type: 'object', properties: {}, additionalProperties: false }
  app.addHook('onRoute', (route) => {
    const schema = route.schema
    if (routeSecurity(schema) === undefined || schema?.querystring !== undefined) return
    route.schema = { ...schema, querystring: none }
  })
}

/** Of a query or path schema: its integer fields, and those that may be given more than once. */
interface TextShapes {
  integers: Set<string>
  lists: Set<string>
}

function textShapes(schema: unknown): TextShapes {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  const named = (type: string) =>
    new Set(Object.keys(properties).filter((name) => properties[name]?.type === type))
  return { integers: named('integer'), lists: named('array') }
}

/**
 * Adds to a schema's own checks what JSON Schema cannot say:
 * - Query and path values are text, which Ajv coerces as JavaScript would: "0x10" and "1e2" would pass as
 *   integers, and a parameter given twice would be reported as not an integer. Only decimal digits count
 *   here, and a repeated parameter is named as such.
 * - No text may hold U+0000 or an unpaired surrogate. PostgreSQL refuses the first (the request failed with
 *   a 500) and SQLite's pattern matching stops at it; the second cannot be written as UTF-8 at all, so it
 *   would be stored as U+FFFD, not as sent.
 * The result has a `schemaEnv`, as Ajv's compiled functions do: Fastify passes a parent to such a function,
 * which Ajv needs to coerce a part's values in place. `compile` is called on the first request.
 */
function withTextChecks(compile: () => ValidateFunction, shapes: TextShapes | undefined): ValidateFunction {
  let validate: ValidateFunction | undefined
  const checked = ((data: unknown, context?: Parameters<ValidateFunction>[1]) => {
    validate ??= compile()
    const error = shapes && rawTextError(data, shapes)
    if (error === undefined && validate(data, context)) {
      const unstorable = unstorableText(data, '')
      checked.errors = unstorable && [unstorable]
      return unstorable === undefined
    }
    checked.errors = error ? [error] : validate.errors
    return false
  }) as ValidateFunction
  // Only its presence is read (fastify/lib/validation.js): the real one exists once compiled.
  checked.schemaEnv = {} as ValidateFunction['schemaEnv']
  return checked
}

function problem(keyword: string, instancePath: string, params: Record<string, unknown> = {}): ErrorObject {
  return { keyword, instancePath, schemaPath: '#', params }
}

// These two run on every request's parameters, so they loop without building arrays of entries.

function rawTextError(data: unknown, shapes: TextShapes): ErrorObject | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  const values = data as Record<string, unknown>
  for (const name in values) {
    const value = values[name]
    if (Array.isArray(value) && !shapes.lists.has(name)) return problem('repeated', `/${name}`)
    if (shapes.integers.has(name) && typeof value === 'string' && !/^-?\d+$/.test(value)) {
      return problem('type', `/${name}`, { type: 'integer' })
    }
  }
  return undefined
}

function unstorableText(value: unknown, path: string): ErrorObject | undefined {
  if (typeof value === 'string') {
    if (value.includes('\0')) return problem('noNul', path)
    if (!value.isWellFormed()) return problem('wellFormed', path)
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const items = value as Record<string, unknown>
  for (const key in items) {
    const found = unstorableText(items[key], `${path}/${key}`)
    if (found) return found
  }
  return undefined
}

const PART_NAMES: Record<string, string> = {
  body: 'request body',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
}

const TYPE_NAMES: Record<string, string> = {
  object: 'a JSON object',
  array: 'an array',
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  null: 'null',
}

/** `/files/0/name` → `files[0].name` */
function fieldPath(instancePath: string, property?: string): string {
  const parts = instancePath.split('/').filter(Boolean)
  if (property !== undefined) parts.push(property)
  return parts.reduce(
    (path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part),
    '',
  )
}

/** The body field a validation error is about (`files[2].size`); undefined for the body as a whole. */
export function bodyFieldOf(error: ErrorObject): string | undefined {
  const p = error.params as Record<string, unknown>
  const property =
    error.keyword === 'required'
      ? String(p.missingProperty)
      : error.keyword === 'additionalProperties'
        ? String(p.additionalProperty)
        : undefined
  return fieldPath(error.instancePath, property) || undefined
}

/** One clear sentence naming the field and the bound it broke. */
export function describeValidationError(error: ErrorObject, part: string | undefined): string {
  const where = PART_NAMES[part ?? 'body'] ?? part ?? 'request'
  const p = error.params as Record<string, unknown>
  const field = fieldPath(error.instancePath)
  const subject = field ? `${where} "${field}"` : where
  switch (error.keyword) {
    case 'required':
      return `${where === 'request body' ? 'Request body' : where} is missing the required field "${fieldPath(error.instancePath, String(p.missingProperty))}".`
    case 'additionalProperties':
      return `Unknown ${where === 'request body' ? 'field' : where} "${fieldPath(error.instancePath, String(p.additionalProperty))}" is not allowed.`
    case 'minLength':
      return `The ${subject} must be at least ${p.limit} character${p.limit === 1 ? '' : 's'} long.`
    case 'maxLength':
      return `The ${subject} must be at most ${p.limit} characters long.`
    case 'minimum':
      return `The ${subject} must be at least ${p.limit}.`
    case 'maximum':
      return `The ${subject} must be at most ${p.limit}.`
    case 'minItems':
      return `The ${subject} must have at least ${p.limit} item${p.limit === 1 ? '' : 's'}.`
    case 'maxItems':
      return `The ${subject} must have at most ${p.limit} items.`
    case 'minProperties':
      return `The ${subject} must set at least one field.`
    case 'type':
      return `The ${subject} must be ${String(p.type)
        .split(',')
        .map((t) => TYPE_NAMES[t] ?? t)
        .join(' or ')}.`
    case 'enum':
      return `The ${subject} must be one of: ${(p.allowedValues as unknown[]).join(', ')}.`
    case 'repeated':
      return `The ${subject} must be given once.`
    case 'noNul':
      return `The ${subject} must not contain the character U+0000.`
    case 'wellFormed':
      return `The ${subject} must be valid Unicode text in UTF-8: it holds bytes that are not UTF-8, or an unpaired surrogate.`
    case 'format':
      return `The ${subject} must be a valid ${p.format === 'date-time' ? 'ISO 8601 date-time' : p.format}.`
    default:
      return `The ${subject} ${error.message ?? 'is invalid'}.`
  }
}
