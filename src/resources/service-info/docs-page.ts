// The API reference page (/docs), rendered on the server from the OpenAPI document into the common layout and
// stylesheet (its section "The API reference page"): no script of its own, nothing from another origin, so it
// works offline and under the pages' CSP. Every text of the document goes through ghtml's escaping `${…}`
// (markdown.ts renders the descriptions the same way); `!${…}` only inserts fragments made with `html`.
import { html } from 'ghtml'
import type { Page } from '../../platform/web/layout.ts'
import { type Heading, renderInline, renderMarkdown, slug } from './markdown.ts'

type Schema = {
  $ref?: string
  type?: string | string[]
  format?: string
  enum?: unknown[]
  const?: unknown
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  items?: Schema
  properties?: Record<string, Schema>
  required?: string[]
  additionalProperties?: boolean | Schema
  minProperties?: number
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  minItems?: number
  maxItems?: number
  pattern?: string
  default?: unknown
  description?: string
}

type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema }
type MediaTypes = Record<string, { schema?: Schema }>
type Response = {
  description?: string
  content?: MediaTypes
  headers?: Record<string, { description?: string }>
}
type Operation = {
  summary?: string
  description?: string
  tags?: string[]
  security?: Record<string, string[]>[]
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content?: MediaTypes }
  responses?: Record<string, Response>
}

export type OpenApiDocument = {
  info: { title: string; version: string; description?: string }
  servers?: { url: string }[]
  tags?: { name: string; description?: string }[]
  paths?: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema> }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']

export const operationId = (method: string, path: string) =>
  `op-${method}-${path === '/' ? 'root' : slug(path)}`
export const tagId = (tag: string) => `tag-${slug(tag)}`
const schemaId = (name: string) => `schema-${slug(name)}`
const refName = (ref: string) => ref.split('/').pop() ?? ref

/** A compact, linked type expression: `{ data: Folder[], pagination: { nextCursor: string | null } }`. */
function typeOf(schema: Schema | undefined, expandObjects = true): string {
  if (!schema) return 'any'
  if (schema.$ref) {
    const name = refName(schema.$ref)
    return html`<a href="#${schemaId(name)}">${name}</a>`
  }
  const union = schema.anyOf ?? schema.oneOf
  if (union) return union.map((s) => typeOf(s, expandObjects)).join(' | ')
  if (schema.allOf) return schema.allOf.map((s) => typeOf(s, expandObjects)).join(' &amp; ')
  if (schema.const !== undefined) return html`<code>${JSON.stringify(schema.const)}</code>`
  if (schema.enum) return schema.enum.map((v) => html`<code>${JSON.stringify(v)}</code>`).join(' | ')
  if (Array.isArray(schema.type))
    return schema.type.map((type) => typeOf({ ...schema, type }, expandObjects)).join(' | ')
  switch (schema.type) {
    case 'array': {
      const item = typeOf(schema.items, expandObjects)
      return schema.items?.anyOf || schema.items?.oneOf ? `(${item})[]` : `${item}[]`
    }
    case 'object': {
      if (!schema.properties || !expandObjects) return 'object'
      const required = new Set(schema.required ?? [])
      const fields = Object.entries(schema.properties).map(
        ([name, s]) => html`${name}${required.has(name) ? '' : '?'}: !${typeOf(s, expandObjects)}`,
      )
      return `{ ${fields.join(', ')} }`
    }
    case 'string':
      if (schema.format === 'binary') return 'binary'
      return schema.format ? html`string (${schema.format})` : 'string'
    default:
      return html`${schema.type ?? 'any'}`
  }
}

const range = (min: number | undefined, max: number | undefined, unit = '') => {
  const suffix = unit ? ` ${unit}` : ''
  if (min !== undefined && max !== undefined) return `${min}..${max}${suffix}`
  if (min !== undefined) return `≥ ${min}${suffix}`
  if (max !== undefined) return `≤ ${max}${suffix}`
  return undefined
}

/** The bounds of a value, for the constraints column: "1..255 chars", "≥ 1", "default 25". */
function boundsOf(schema: Schema | undefined): string {
  if (!schema) return ''
  const parts: string[] = []
  const branches = (schema.anyOf ?? schema.oneOf ?? [schema]).filter((s) => s.type !== 'null')
  for (const s of branches) {
    const ranges = [
      range(s.minLength, s.maxLength, 'chars'),
      range(s.minimum, s.maximum),
      range(s.minItems, s.maxItems, 'items'),
    ]
    for (const bound of ranges) if (bound) parts.push(html`${bound}`)
    if (s.pattern !== undefined) parts.push(html`pattern <code>${s.pattern}</code>`)
  }
  if (schema.default !== undefined) parts.push(html`default <code>${JSON.stringify(schema.default)}</code>`)
  return parts.join(', ')
}

interface FieldRow {
  path: string
  schema: Schema
  required: boolean
}

/** Flattens an object schema into dotted field paths (`files[].name`); references stay links. */
function fieldRows(schema: Schema, prefix = '', rows: FieldRow[] = []): FieldRow[] {
  const required = new Set(schema.required ?? [])
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = `${prefix}${name}`
    rows.push({ path, schema: field, required: required.has(name) })
    const objectLike = [field, ...(field.anyOf ?? field.oneOf ?? [])]
    for (const s of objectLike) {
      if (s.type === 'object' && s.properties) fieldRows(s, `${path}.`, rows)
      if (s.type === 'array' && s.items && !s.items.$ref) {
        if (s.items.type === 'object' && s.items.properties) fieldRows(s.items, `${path}[].`, rows)
        else if (boundsOf(s.items)) rows.push({ path: `${path}[]`, schema: s.items, required: true })
      }
    }
  }
  return rows
}

function describe(schema: Schema): string {
  const own =
    schema.description ?? (schema.anyOf ?? schema.oneOf ?? []).find((s) => s.description)?.description
  return own ? renderInline(own) : ''
}

/** `limits.pageSize.min` with its parents muted, so the field itself stands out. */
function fieldName(path: string): string {
  const cut = path.lastIndexOf('.') + 1
  return cut > 0 ? html`<span class="parent">${path.slice(0, cut)}</span>${path.slice(cut)}` : html`${path}`
}

/** A wide table, scrolled on its own on a narrow screen rather than widening the page. */
const scrolled = (table: string) => html`<div class="docs-scroll">!${table}</div>`

function fieldTable(schema: Schema): string {
  const rows = fieldRows(schema)
  if (rows.length === 0) return ''
  return scrolled(
    html`<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Constraints</th><th>Description</th></tr></thead><tbody>!${rows.map(
      (r) =>
        html`<tr><td class="field-name" data-label="Field"><code>!${fieldName(r.path)}</code></td><td class="type" data-label="Type">!${typeOf(r.schema, false)}</td><td data-label="Required">${r.required ? 'yes' : 'no'}</td><td data-label="Constraints">!${boundsOf(r.schema)}</td><td data-label="Description">!${describe(r.schema)}</td></tr>`,
    )}</tbody></table>`,
  )
}

function objectNotes(schema: Schema): string {
  const notes: string[] = []
  if (schema.minProperties) notes.push(`Set at least ${schema.minProperties} field.`)
  if (schema.additionalProperties === false) notes.push('No other fields are allowed.')
  return notes.length ? html`<p class="note">${notes.join(' ')}</p>` : ''
}

function scopesOf(operation: Operation): string {
  if (!operation.security?.length) return html`<p class="auth">No authentication required.</p>`
  const alternatives = operation.security.map((requirement) =>
    Object.values(requirement)
      .flat()
      .map((scope) => html`<code class="scope">${scope}</code>`)
      .join(' and '),
  )
  return html`<p class="auth">Scopes: !${alternatives.join(' <span class="or">or</span> ')}</p>`
}

function parametersOf(operation: Operation): string {
  const parameters = operation.parameters ?? []
  if (parameters.length === 0) return ''
  return html`<h4>Parameters</h4>!${scrolled(
    html`<table class="fields"><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Constraints</th><th>Description</th></tr></thead><tbody>!${parameters.map(
      (p) =>
        html`<tr><td class="field-name" data-label="Name"><code>${p.name}</code></td><td data-label="In">${p.in}</td><td class="type" data-label="Type">!${typeOf(p.schema)}</td><td data-label="Required">${p.required ? 'yes' : 'no'}</td><td data-label="Constraints">!${boundsOf(p.schema)}</td><td data-label="Description">!${p.description ? renderInline(p.description) : ''}</td></tr>`,
    )}</tbody></table>`,
  )}`
}

function requestBodyOf(operation: Operation): string {
  const content = operation.requestBody?.content
  if (!content) return ''
  return Object.entries(content)
    .map(([mediaType, { schema }]) => {
      const heading = html`<h4>Request body <span class="media">${mediaType}${operation.requestBody?.required ? ', required' : ''}</span></h4>`
      if (!schema) return heading
      if (schema.type === 'object' && schema.properties)
        return heading + fieldTable(schema) + objectNotes(schema)
      return html`!${heading}<p class="type">!${typeOf(schema)}</p>`
    })
    .join('')
}

/**
 * Short bodies read best as one type expression in the responses table; long inline objects get a field
 * table of their own below it (`details`), too wide for a table cell.
 */
function bodyOf(status: string, content: MediaTypes | undefined, details: string[]): string {
  if (!content) return html`<span class="muted">no body</span>`
  return Object.entries(content)
    .map(([mediaType, { schema }]) => {
      const expression = typeOf(schema)
      const plainLength = expression.replace(/<[^>]+>/g, '').length
      const media = mediaType === 'application/json' ? '' : html`<span class="media">${mediaType}</span> `
      if (plainLength <= 110 || !schema?.properties)
        return html`!${media}<span class="type">!${expression}</span>`
      details.push(
        html`<p class="body-title"><span class="status s${status[0] ?? ''}">${status}</span> !${media}body</p>!${fieldTable(schema)}`,
      )
      return html`!${media}object, fields below`
    })
    .join('')
}

function isErrorResponse(response: Response): boolean {
  return response.content?.['application/json']?.schema?.$ref?.endsWith('/Error') ?? false
}

function responsesOf(operation: Operation): string {
  const entries = Object.entries(operation.responses ?? {})
  const success = entries.filter(([, r]) => !isErrorResponse(r))
  const errors = entries.filter(([, r]) => isErrorResponse(r))
  const details: string[] = []
  const rows = success.map(
    ([status, r]) =>
      html`<tr><td data-label="Status"><span class="status s${status[0] ?? ''}">${status}</span></td><td data-label="Description">!${r.description ? renderInline(r.description) : ''}!${headersOf(r)}</td><td data-label="Body">!${bodyOf(status, r.content, details)}</td></tr>`,
  )
  if (errors.length > 0) {
    // Which error statuses carry which header, once per header: `WWW-Authenticate (401, 403)`.
    const headers = new Map<string, string[]>()
    for (const [status, r] of errors) {
      for (const name of Object.keys(r.headers ?? {}))
        headers.set(name, [...(headers.get(name) ?? []), status])
    }
    const headerList = [...headers].map(
      ([name, statuses]) => html`<code>${name}</code> (${statuses.join(', ')})`,
    )
    rows.push(
      html`<tr><td data-label="Status">!${errors.map(([status]) => html`<span class="status s4">${status}</span>`).join(' ')}</td><td data-label="Description">The error envelope; codes in <a href="#errors">Errors</a>.!${headerList.length ? html`<div class="headers">Headers: !${headerList.join(', ')}</div>` : ''}</td><td data-label="Body"><span class="type"><a href="#${schemaId('Error')}">Error</a></span></td></tr>`,
    )
  }
  return html`<h4>Responses</h4>!${scrolled(
    html`<table class="responses"><thead><tr><th>Status</th><th>Description</th><th>Body</th></tr></thead><tbody>!${rows}</tbody></table>`,
  )}!${details}`
}

function headersOf(response: Response): string {
  const names = Object.keys(response.headers ?? {})
  return names.length
    ? html`<div class="headers">Headers: !${names.map((n) => html`<code>${n}</code>`).join(', ')}</div>`
    : ''
}

interface Op {
  method: string
  path: string
  operation: Operation
}

function renderOperation({ method, path, operation }: Op, basePath: string): string {
  const id = operationId(method, path)
  return html`<article class="op" id="${id}">
<h3>${operation.summary ?? `${method.toUpperCase()} ${path}`}</h3>
<p class="endpoint"><span class="method ${method}">${method.toUpperCase()}</span> <code><span class="base">${basePath}</span>${path}</code></p>
!${operation.description ? renderMarkdown(operation.description, { idPrefix: `${id}-`, topLevel: 4 }).html : ''}
!${scopesOf(operation)}
!${parametersOf(operation)}
!${requestBodyOf(operation)}
!${responsesOf(operation)}
</article>`
}

function groupByTag(document: OpenApiDocument): { name: string; description?: string; ops: Op[] }[] {
  const ops: Op[] = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, path, operation: item[method] as Operation })),
  )
  const declared = document.tags ?? []
  const names = [
    ...declared.map((t) => t.name),
    ...ops.map((op) => op.operation.tags?.[0] ?? 'other').filter((n) => !declared.some((t) => t.name === n)),
  ]
  return [...new Set(names)]
    .map((name) => ({
      name,
      description: declared.find((t) => t.name === name)?.description,
      ops: ops.filter((op) => (op.operation.tags?.[0] ?? 'other') === name),
    }))
    .filter((group) => group.ops.length > 0)
}

function renderSchemas(document: OpenApiDocument): string {
  return Object.entries(document.components?.schemas ?? {})
    .map(
      ([name, schema]) => html`<article class="schema" id="${schemaId(name)}">
<h3>${name}</h3>
!${schema.description ? html`<p>!${renderInline(schema.description)}</p>` : ''}
!${schema.properties ? fieldTable(schema) + objectNotes(schema) : html`<p class="type">!${typeOf(schema)}</p>`}
</article>`,
    )
    .join('\n')
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/**
 * The contents beside the reference: the overview's sections, every operation under its tag, the schemas.
 * On a narrow screen only the sections and tags are shown (styles.css), so it stays short above the text.
 */
function nav(headings: Heading[], groups: ReturnType<typeof groupByTag>, schemaNames: string[]): string {
  const overview = headings
    .filter((h) => h.level === 2)
    .map((h) => html`<li><a href="#${h.id}">${h.text}</a></li>`)
  const tags = groups.map(
    (g) =>
      html`<li><a class="tag" href="#${tagId(g.name)}">${capitalize(g.name)}</a><ul class="ops">!${g.ops.map(
        (op) =>
          html`<li><a href="#${operationId(op.method, op.path)}" title="${op.operation.summary ?? ''}"><span class="method ${op.method}">${op.method.toUpperCase()}</span> ${op.path}</a></li>`,
      )}</ul></li>`,
  )
  const schemas = schemaNames.map((n) => html`<li><a href="#${schemaId(n)}">${n}</a></li>`)
  return html`<nav class="docs-nav" aria-label="Contents"><div class="docs-nav-inner">
<p class="nav-title"><a href="#top">Coffer API</a></p>
<p class="nav-section">Overview</p><ul>!${overview}</ul>
<p class="nav-section">Operations</p><ul class="tags">!${tags}<li class="to-schemas"><a class="tag" href="#schemas">Schemas</a></li></ul>
<p class="nav-section schemas">Schemas</p><ul class="schemas">!${schemas}</ul>
</div></nav>`
}

/** The reference page of the document, for the common layout; rendered once and kept by its route. */
export function docsPage(document: OpenApiDocument): Page {
  const basePath = new URL(document.servers?.[0]?.url ?? 'http://localhost/').pathname.replace(/\/$/, '')
  const description = renderMarkdown(document.info.description ?? '', { idPrefix: '', topLevel: 2 })
  const groups = groupByTag(document)
  const schemaNames = Object.keys(document.components?.schemas ?? {})
  const title = `${document.info.title} reference`
  const server = document.servers?.[0]?.url
  const main = html`<div class="docs">
!${nav(description.headings, groups, schemaNames)}
<div class="docs-content" id="top">
<h1>${title}</h1>
<p class="subtitle">Version ${document.info.version}!${server ? html` · Base address <code>${server}</code>` : ''} · <a href="${basePath}/openapi.json">OpenAPI document</a></p>
!${description.html}
!${groups.map(
    (g) => html`<section id="${tagId(g.name)}">
<h2>${capitalize(g.name)}</h2>
!${g.description ? html`<p>!${renderInline(g.description)}</p>` : ''}
!${g.ops.map((op) => renderOperation(op, basePath)).join('\n')}
</section>`,
  )}
<section id="schemas">
<h2>Schemas</h2>
!${renderSchemas(document)}
</section>
</div>
</div>`
  return {
    title,
    description: `The reference of every operation of the ${document.info.title}: parameters, bodies, responses, scopes.`,
    main,
  }
}
