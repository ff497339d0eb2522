// The rules of what a submitter may send through a file request's public page, in one place for both sides:
// the page checks them in the browser, so that a mistake shows next to its field before anything is sent, and
// the server checks them again, whatever a client sends. Imported by server and browser code alike, so it
// imports only other shared rules.
import { withLfLineBreaks } from '../../platform/line-breaks.shared.ts'

/** Bounds of what a submitter types on the public page (the API contract leaves them open). */
export const SUBMISSION_LIMITS = { name: 100, email: 254, message: 1000 } as const

/** Files one preparation may declare. */
export const MAX_FILES_PER_PREPARATION = 100

// The pattern of ajv-formats' `email` format, which the Submission schema declares for submitterEmail.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

/** Whether `text` holds a C0 or C1 control character; a message may hold tab, line feed and carriage return. */
function hasControl(text: string, allowLineBreaks: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (allowLineBreaks && (code === 0x09 || code === 0x0a || code === 0x0d)) continue
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}

export type SubmitterField = 'submitterName' | 'submitterEmail' | 'message'

export interface SubmitterInput {
  submitterName?: string | null
  submitterEmail?: string | null
  message?: string | null
}

export interface SubmitterFields {
  submitterName: string | null
  submitterEmail: string | null
  message: string | null
}

/** What a request asks of its submitters. */
export interface EmailSettings {
  collectEmail: boolean
  emailRequired: boolean
}

/** A field's problem, in words a submitter understands. */
export interface FieldProblem {
  field: SubmitterField
  message: string
}

function clean(
  value: string | null | undefined,
  field: SubmitterField,
  label: string,
  max: number,
  allowLineBreaks = false,
): string | null | FieldProblem {
  const trimmed = withLfLineBreaks(value ?? '').trim()
  if (trimmed.length === 0) return null
  if (trimmed.length > max) return { field, message: `The ${label} must be at most ${max} characters long.` }
  if (hasControl(trimmed, allowLineBreaks))
    return { field, message: `The ${label} must not contain control characters.` }
  return trimmed
}

const isProblem = (value: unknown): value is FieldProblem => typeof value === 'object' && value !== null

/**
 * The submitter's fields, trimmed (blank means not given), or the first problem found. An email the request
 * does not collect is dropped; one it requires must be there.
 */
export function checkSubmitter(
  input: SubmitterInput,
  settings: EmailSettings,
): { fields: SubmitterFields } | { problem: FieldProblem } {
  const name = clean(input.submitterName, 'submitterName', 'name', SUBMISSION_LIMITS.name)
  if (isProblem(name)) return { problem: name }
  const message = clean(input.message, 'message', 'message', SUBMISSION_LIMITS.message, true)
  if (isProblem(message)) return { problem: message }
  let email: string | null = null
  if (settings.collectEmail) {
    const given = clean(input.submitterEmail, 'submitterEmail', 'email address', SUBMISSION_LIMITS.email)
    if (isProblem(given)) return { problem: given }
    if (given === null && settings.emailRequired) {
      return {
        problem: { field: 'submitterEmail', message: 'Give your email address: this request asks for it.' },
      }
    }
    if (given !== null && !EMAIL.test(given)) {
      return { problem: { field: 'submitterEmail', message: 'This is not a valid email address.' } }
    }
    email = given
  }
  return { fields: { submitterName: name, submitterEmail: email, message } }
}

// --- The types a request accepts ---------------------------------------------------------------------------

/** Entries of a request's list of accepted types at most, and the length of each. */
export const ALLOWED_TYPES_LIMITS = { entries: 50, length: 100 } as const

const EXTENSION_ENTRY = /^\.[a-z0-9][a-z0-9_+-]{0,19}(?:\.[a-z0-9][a-z0-9_+-]{0,19})?$/
const TYPE_TOKEN = '[a-z0-9!#$&^_.+-]+'
const MIME_ENTRY = new RegExp(`^${TYPE_TOKEN}/(?:${TYPE_TOKEN}|\\*)$`)

/**
 * One entry of a list of accepted types in its stored form (lower case), or undefined when it is neither an
 * extension (".pdf", ".tar.gz") nor a MIME type ("application/pdf", "image/*").
 */
export function normalizeAllowedType(entry: string): string | undefined {
  const lower = entry.trim().toLowerCase()
  if (lower.length === 0 || lower.length > ALLOWED_TYPES_LIMITS.length) return undefined
  return EXTENSION_ENTRY.test(lower) || MIME_ENTRY.test(lower) ? lower : undefined
}

/** The type without its parameters, lower case: `Text/Plain; charset=utf-8` → `text/plain`. */
function essence(type: string): string {
  return (type.split(';')[0] ?? '').trim().toLowerCase()
}

/**
 * Whether a file named `name` of `type` is accepted by `allowed` (stored entries; empty accepts anything): its
 * name ends with an extension of the list, or its type is one of the list's types (`image/*` for any image).
 */
export function isAcceptedType(name: string, type: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true
  const lowerName = name.toLowerCase()
  const mime = essence(type)
  const family = `${mime.split('/')[0]}/*`
  return allowed.some((entry) =>
    entry.startsWith('.')
      ? lowerName.endsWith(entry) && lowerName.length > entry.length
      : entry === mime || entry === family,
  )
}

/** The list in words: ".pdf, .docx or any image". */
export function describeAllowedTypes(allowed: readonly string[]): string {
  const words = allowed.map((entry) => {
    if (entry.endsWith('/*')) return `any ${entry.slice(0, -2)}`
    return entry
  })
  if (words.length <= 1) return words.join('')
  return `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`
}
