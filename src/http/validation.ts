// Request validation. JSON bodies are checked strictly: no type coercion, unknown properties rejected.
// Query strings and path parameters arrive as text, so there (and only there) numbers are coerced.
import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

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
  const bodyAjv = makeAjv(false, sharedSchemas)
  const textAjv = makeAjv(true, sharedSchemas)
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object)
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
    case 'format':
      return `The ${subject} must be a valid ${p.format === 'date-time' ? 'ISO 8601 date-time' : p.format}.`
    default:
      return `The ${subject} ${error.message ?? 'is invalid'}.`
  }
}
