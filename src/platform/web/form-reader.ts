// Page forms are validated by TypeBox schemas, as the API's JSON bodies are, after the same strict parser
// (http/strict-text.ts: UTF-8, no U+0000). A form arrives as text: numbers are read from their digits, a field
// given once where a list is expected becomes a list of one, and an empty field counts as not filled in. A
// refusal names each field at fault in words meant for a person (a schema may give its own `errorMessage`),
// so the page can be shown again with every problem beside its field.
import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { Static, TSchema } from 'typebox'

export type FormBody = Record<string, string | string[] | undefined>

export type FormReading<T> = (
  | { ok: true; value: T }
  | {
      ok: false
      /** Field name → message; `form` for a problem of the form as a whole. */
      errors: Record<string, string>
    }
) & {
  /** What was typed, as text: to show the form again (a service may still refuse what the schema let by). */
  values: Record<string, string>
}

const ajv = new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, strict: false })
addFormats.default(ajv)

/** Fields of every form that are not the form's own: the CSRF token. */
const FRAMEWORK_FIELDS = new Set(['_csrf'])

/** A reader of one form, compiled once: call it with a parsed body. */
export function formReader<T extends TSchema>(schema: T): (body: unknown) => FormReading<Static<T>> {
  const validate = ajv.compile(schema as object)
  const properties = (schema as { properties?: Record<string, FieldSchema> }).properties ?? {}
  return (body) => {
    const form = (typeof body === 'object' && body !== null ? body : {}) as FormBody
    const data: Record<string, string | string[]> = {}
    const values: Record<string, string> = {}
    for (const [name, value] of Object.entries(form)) {
      if (FRAMEWORK_FIELDS.has(name) || value === undefined) continue
      values[name] = Array.isArray(value) ? value.join(', ') : value
      if (value === '') continue
      data[name] = value
    }
    if (validate(data)) return { ok: true, value: data as Static<T>, values }
    const errors: Record<string, string> = {}
    for (const error of validate.errors ?? []) {
      const [name, message] = describe(error, properties)
      errors[name] ??= message
    }
    return { ok: false, errors, values }
  }
}

interface FieldSchema {
  type?: string
  /** What to say of any fault of the field, or of each kind of fault (by the keyword that failed). */
  errorMessage?: string | Record<string, string>
  minimum?: number
  maximum?: number
  items?: FieldSchema
}

/** The field an error is about, and what to tell the person who filled it in. */
function describe(error: ErrorObject, properties: Record<string, FieldSchema>): [string, string] {
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'additionalProperties') {
    return [
      'form',
      `This form has no field named "${String(params.additionalProperty)}". Reload the page and try again.`,
    ]
  }
  const name =
    error.keyword === 'required'
      ? String(params.missingProperty)
      : (error.instancePath.split('/')[1] ?? 'form')
  const schema = properties[name]
  const own = schema?.errorMessage
  const said = typeof own === 'string' ? own : own?.[error.keyword]
  if (said) return [name, said]
  switch (error.keyword) {
    case 'required':
    case 'minLength':
      return [
        name,
        error.keyword === 'minLength' && Number(params.limit) > 1
          ? `Use at least ${params.limit} characters.`
          : 'Fill this in.',
      ]
    case 'maxLength':
      return [name, `Use at most ${params.limit} characters.`]
    case 'minimum':
    case 'maximum':
      return [name, numberRange(schema)]
    case 'type':
      return [
        name,
        params.type === 'integer' || params.type === 'number' ? numberRange(schema) : 'This is not valid.',
      ]
    case 'enum':
    case 'const':
    case 'anyOf':
      return [name, 'Choose one of the options.']
    case 'maxItems':
      return [name, `Choose at most ${params.limit}.`]
    case 'minItems':
      return [name, `Choose at least ${params.limit}.`]
    default:
      return [name, 'This is not valid.']
  }
}

function numberRange(schema: FieldSchema | undefined): string {
  const { minimum, maximum } = schema ?? {}
  const whole = schema?.type === 'integer' ? 'a whole number' : 'a number'
  const n = (value: number) => value.toLocaleString('en')
  if (minimum !== undefined && maximum !== undefined)
    return `Enter ${whole} from ${n(minimum)} to ${n(maximum)}.`
  if (minimum !== undefined) return `Enter ${whole} of at least ${n(minimum)}.`
  if (maximum !== undefined) return `Enter ${whole} of at most ${n(maximum)}.`
  return `Enter ${whole}.`
}
