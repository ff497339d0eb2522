// Text a client sends must be UTF-8, in the query as in the path (the router refuses a path that is not) and
// in JSON bodies: Node and Fastify would otherwise decode what is not as U+FFFD, or keep the raw
// percent-encoding, so that a search for `%FF` ran, a folder id echoed bytes that were never text, and a body
// was stored other than as sent. Both parsers below mark or refuse such text; the validators then answer
// 400 naming the parameter (validation.ts, `wellFormed`).
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance } from 'fastify'
import { invalid } from '../errors.ts'

/** What a query value that is not UTF-8 becomes: an unpaired surrogate, which the validators refuse. */
const NOT_TEXT = '\uDC80'

function decode(raw: string): string {
  const plus = raw.includes('+') ? raw.replaceAll('+', ' ') : raw
  if (!plus.includes('%')) return plus
  try {
    return decodeURIComponent(plus)
  } catch {
    return NOT_TEXT
  }
}

/**
 * Fastify's `querystringParser`: `a=1&b=2&b=3` → `{ a: '1', b: ['2', '3'] }`, as its own parser does, but
 * percent-encoding that is not UTF-8 (`%FF`, or a surrogate's bytes `%ED%A0%80`) yields NOT_TEXT instead of
 * U+FFFD or the raw text.
 */
export function strictQuerystring(text: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null)
  for (const pair of text.split('&')) {
    if (pair === '') continue
    const equals = pair.indexOf('=')
    const key = decode(equals < 0 ? pair : pair.slice(0, equals))
    const value = decode(equals < 0 ? '' : pair.slice(equals + 1))
    const existing = query[key]
    if (existing === undefined) query[key] = value
    else if (Array.isArray(existing)) existing.push(value)
    else query[key] = [existing, value]
  }
  return query
}

/**
 * The `parser` of @fastify/formbody for the pages' forms: `strictQuerystring` (form bodies are written as query
 * strings), refusing with a 400 any field that is not storable text (U+0000, which PostgreSQL refuses, or what
 * is not UTF-8), as the validators refuse it in JSON bodies.
 */
export function parseFormStrictly(text: string): Record<string, string | string[]> {
  const form = strictQuerystring(text)
  for (const name in form) {
    const values = form[name]
    for (const value of Array.isArray(values) ? values : [values]) {
      if (!name.isWellFormed() || !(value ?? '').isWellFormed() || `${name}${value}`.includes('\0')) {
        throw invalid('A form field is not valid text.', 'Send the form as UTF-8 text without U+0000.')
      }
    }
  }
  return form
}

/** JSON bodies are parsed by Fastify's own parser (with its prototype-poisoning checks) once found UTF-8. */
export function parseJsonStrictly(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer
    if (!isUtf8(bytes)) {
      done(invalid('The request body is not valid UTF-8 text.', 'Send JSON encoded as UTF-8.'), undefined)
      return
    }
    parse(request, bytes.toString('utf8'), done)
  })
}
