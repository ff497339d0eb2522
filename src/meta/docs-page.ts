// The API reference page (/docs), rendered on the server from the OpenAPI document: one self-contained HTML
// page with no script and no external resource, so it works offline and under a strict CSP. All text from
// the document is escaped (see markdown.ts).
import { createHash } from 'node:crypto'
import { escapeHtml as esc, type Heading, renderInline, renderMarkdown, slug } from './markdown.ts'

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
    return `<a href="#${esc(schemaId(name))}">${esc(name)}</a>`
  }
  const union = schema.anyOf ?? schema.oneOf
  if (union) return union.map((s) => typeOf(s, expandObjects)).join(' | ')
  if (schema.allOf) return schema.allOf.map((s) => typeOf(s, expandObjects)).join(' &amp; ')
  if (schema.const !== undefined) return `<code>${esc(JSON.stringify(schema.const))}</code>`
  if (schema.enum) return schema.enum.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(' | ')
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
        ([name, s]) => `${esc(name)}${required.has(name) ? '' : '?'}: ${typeOf(s, expandObjects)}`,
      )
      return `{ ${fields.join(', ')} }`
    }
    case 'string':
      if (schema.format === 'binary') return 'binary'
      return schema.format ? `string (${esc(schema.format)})` : 'string'
    default:
      return esc(schema.type ?? 'any')
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
    for (const bound of ranges) if (bound) parts.push(esc(bound))
    if (s.pattern !== undefined) parts.push(`pattern <code>${esc(s.pattern)}</code>`)
  }
  if (schema.default !== undefined) parts.push(`default <code>${esc(JSON.stringify(schema.default))}</code>`)
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
  return cut > 0 ? `<span class="parent">${esc(path.slice(0, cut))}</span>${esc(path.slice(cut))}` : esc(path)
}

function fieldTable(schema: Schema): string {
  const rows = fieldRows(schema)
  if (rows.length === 0) return ''
  return `<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Constraints</th><th>Description</th></tr></thead><tbody>${rows
    .map(
      (r) =>
        `<tr><td class="field"><code>${fieldName(r.path)}</code></td><td class="type">${typeOf(r.schema, false)}</td><td>${r.required ? 'yes' : 'no'}</td><td>${boundsOf(r.schema)}</td><td>${describe(r.schema)}</td></tr>`,
    )
    .join('')}</tbody></table>`
}

function objectNotes(schema: Schema): string {
  const notes: string[] = []
  if (schema.minProperties) notes.push(`Set at least ${schema.minProperties} field.`)
  if (schema.additionalProperties === false) notes.push('No other fields are allowed.')
  return notes.length ? `<p class="note">${notes.join(' ')}</p>` : ''
}

function scopesOf(operation: Operation): string {
  if (!operation.security?.length) return '<p class="auth">No authentication required.</p>'
  const alternatives = operation.security.map((requirement) =>
    Object.values(requirement)
      .flat()
      .map((scope) => `<code class="scope">${esc(scope)}</code>`)
      .join(' and '),
  )
  return `<p class="auth">Scopes: ${alternatives.join(' <span class="or">or</span> ')}</p>`
}

function parametersOf(operation: Operation): string {
  const parameters = operation.parameters ?? []
  if (parameters.length === 0) return ''
  return `<h4>Parameters</h4><table class="fields"><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Constraints</th><th>Description</th></tr></thead><tbody>${parameters
    .map(
      (p) =>
        `<tr><td class="field"><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td class="type">${typeOf(p.schema)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${boundsOf(p.schema)}</td><td>${p.description ? renderInline(p.description) : ''}</td></tr>`,
    )
    .join('')}</tbody></table>`
}

function requestBodyOf(operation: Operation): string {
  const content = operation.requestBody?.content
  if (!content) return ''
  return Object.entries(content)
    .map(([mediaType, { schema }]) => {
      const heading = `<h4>Request body <span class="media">${esc(mediaType)}${operation.requestBody?.required ? ', required' : ''}</span></h4>`
      if (!schema) return heading
      if (schema.type === 'object' && schema.properties)
        return heading + fieldTable(schema) + objectNotes(schema)
      return `${heading}<p class="type">${typeOf(schema)}</p>`
    })
    .join('')
}

/**
 * Short bodies read best as one type expression in the responses table; long inline objects get a field
 * table of their own below it (`details`), too wide for a table cell.
 */
function bodyOf(status: string, content: MediaTypes | undefined, details: string[]): string {
  if (!content) return '<span class="muted">no body</span>'
  return Object.entries(content)
    .map(([mediaType, { schema }]) => {
      const expression = typeOf(schema)
      const plainLength = expression.replace(/<[^>]+>/g, '').length
      const media = mediaType === 'application/json' ? '' : `<span class="media">${esc(mediaType)}</span> `
      if (plainLength <= 110 || !schema?.properties) return `${media}<span class="type">${expression}</span>`
      details.push(
        `<p class="body-title"><span class="status s${esc(status[0] ?? '')}">${esc(status)}</span> ${media}body</p>${fieldTable(schema)}`,
      )
      return `${media}object, fields below`
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
      `<tr><td><span class="status s${esc(status[0] ?? '')}">${esc(status)}</span></td><td>${r.description ? renderInline(r.description) : ''}${headersOf(r)}</td><td>${bodyOf(status, r.content, details)}</td></tr>`,
  )
  if (errors.length > 0) {
    // Which error statuses carry which header, once per header: `WWW-Authenticate (401, 403)`.
    const headers = new Map<string, string[]>()
    for (const [status, r] of errors) {
      for (const name of Object.keys(r.headers ?? {}))
        headers.set(name, [...(headers.get(name) ?? []), status])
    }
    const headerList = [...headers].map(
      ([name, statuses]) => `<code>${esc(name)}</code> (${esc(statuses.join(', '))})`,
    )
    rows.push(
      `<tr><td>${errors.map(([status]) => `<span class="status s4">${esc(status)}</span>`).join(' ')}</td><td>The error envelope; codes in <a href="#errors">Errors</a>.${headerList.length ? `<div class="headers">Headers: ${headerList.join(', ')}</div>` : ''}</td><td><span class="type"><a href="#${schemaId('Error')}">Error</a></span></td></tr>`,
    )
  }
  return `<h4>Responses</h4><table class="responses"><thead><tr><th>Status</th><th>Description</th><th>Body</th></tr></thead><tbody>${rows.join('')}</tbody></table>${details.join('')}`
}

function headersOf(response: Response): string {
  const names = Object.keys(response.headers ?? {})
  return names.length
    ? `<div class="headers">Headers: ${names.map((n) => `<code>${esc(n)}</code>`).join(', ')}</div>`
    : ''
}

interface Op {
  method: string
  path: string
  operation: Operation
}

function renderOperation({ method, path, operation }: Op, basePath: string): string {
  return `<article class="op" id="${esc(operationId(method, path))}">
<h3>${esc(operation.summary ?? `${method.toUpperCase()} ${path}`)}</h3>
<p class="endpoint"><span class="method ${esc(method)}">${esc(method.toUpperCase())}</span> <code><span class="base">${esc(basePath)}</span>${esc(path)}</code></p>
${operation.description ? renderMarkdown(operation.description, { idPrefix: `${operationId(method, path)}-`, topLevel: 4 }).html : ''}
${scopesOf(operation)}
${parametersOf(operation)}
${requestBodyOf(operation)}
${responsesOf(operation)}
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
      ([name, schema]) => `<article class="schema" id="${esc(schemaId(name))}">
<h3>${esc(name)}</h3>
${schema.description ? `<p>${renderInline(schema.description)}</p>` : ''}
${schema.properties ? fieldTable(schema) + objectNotes(schema) : `<p class="type">${typeOf(schema)}</p>`}
</article>`,
    )
    .join('\n')
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

function nav(headings: Heading[], groups: ReturnType<typeof groupByTag>, schemaNames: string[]): string {
  const overview = headings
    .filter((h) => h.level === 2)
    .map((h) => `<li><a href="#${esc(h.id)}">${esc(h.text)}</a></li>`)
    .join('')
  const tags = groups
    .map(
      (g) =>
        `<li><a class="tag" href="#${esc(tagId(g.name))}">${esc(capitalize(g.name))}</a><ul>${g.ops
          .map(
            (op) =>
              `<li><a href="#${esc(operationId(op.method, op.path))}" title="${esc(op.operation.summary ?? '')}"><span class="method ${esc(op.method)}">${esc(op.method.toUpperCase())}</span> ${esc(op.path)}</a></li>`,
          )
          .join('')}</ul></li>`,
    )
    .join('')
  const schemas = schemaNames.map((n) => `<li><a href="#${esc(schemaId(n))}">${esc(n)}</a></li>`).join('')
  return `<nav aria-label="Contents"><p class="nav-title"><a href="#top">Coffer API</a></p>
<p class="nav-section">Overview</p><ul>${overview}</ul>
<p class="nav-section">Operations</p><ul class="ops">${tags}</ul>
<p class="nav-section">Schemas</p><ul>${schemas}</ul></nav>`
}

const STYLE = `
:root{--fg:#1d2430;--muted:#5b6472;--bg:#fff;--panel:#f6f7f9;--line:#e2e5ea;--accent:#2457c5;--code:#f1f3f6}
*{box-sizing:border-box}
html{scroll-padding-top:1rem}
body{margin:0;font:15px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.88em}
code{background:var(--code);padding:.1em .35em;border-radius:4px}
pre{background:var(--code);padding:.8rem 1rem;border-radius:6px;overflow-x:auto;line-height:1.45}pre code{padding:0;background:none}
nav{position:fixed;top:0;bottom:0;left:0;width:280px;overflow-y:auto;padding:1.2rem 1rem 2rem;background:var(--panel);border-right:1px solid var(--line);font-size:14px}
nav ul{list-style:none;margin:0;padding:0}nav li{margin:.1rem 0}nav ul ul{margin:.2rem 0 .6rem .2rem}
nav a{color:var(--fg);display:block;padding:.1rem .3rem;border-radius:4px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
nav a:hover{background:var(--line);text-decoration:none}
nav a.tag{font-weight:600}
.nav-title{font-weight:700;font-size:16px;margin:0 0 .8rem}.nav-title a{padding:0}
.nav-section{text-transform:uppercase;letter-spacing:.06em;font-size:11px;color:var(--muted);margin:1rem 0 .3rem;font-weight:600}
main{margin-left:280px;padding:2rem 3rem 4rem;max-width:1100px}
h1{font-size:2rem;margin:0 0 .3rem}
h2{font-size:1.45rem;margin:2.6rem 0 .8rem;padding-bottom:.3rem;border-bottom:1px solid var(--line)}
h3{font-size:1.15rem;margin:0 0 .4rem}
h4{font-size:.95rem;margin:1.1rem 0 .4rem;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.subtitle{color:var(--muted);margin:0 0 1.5rem}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1rem;font-size:14px}
th,td{border:1px solid var(--line);padding:.35rem .6rem;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}
td code{overflow-wrap:break-word}td.field code{white-space:nowrap}.parent{color:var(--muted)}
.body-title{margin:.8rem 0 .2rem;font-weight:600}
td.type,.type{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}
.op,.schema{border:1px solid var(--line);border-radius:8px;padding:1.1rem 1.3rem;margin:1.2rem 0;background:var(--bg);overflow-x:auto}
.op:target,.schema:target{border-color:var(--accent);box-shadow:0 0 0 3px #2457c522}
.endpoint{margin:.2rem 0 .8rem}.endpoint code{font-size:.95em}.base{color:var(--muted)}
.method{display:inline-block;min-width:3.6em;text-align:center;font:600 11px/1.7 ui-monospace,Menlo,Consolas,monospace;border-radius:4px;padding:0 .35em;color:#fff;background:#6b7280;vertical-align:1px}
.method.get{background:#1f7a4d}.method.post{background:#2457c5}.method.patch{background:#a15c00}.method.put{background:#a15c00}.method.delete{background:#b42318}
.status{display:inline-block;font:600 12px/1.6 ui-monospace,Menlo,Consolas,monospace;padding:0 .4em;border-radius:4px;background:var(--code)}
.status.s2{color:#1f7a4d}.responses td:first-child{width:10.5em}.status.s4{color:#b42318}
.auth{margin:.4rem 0}.scope{color:#5b3cc4}.or{color:var(--muted);font-style:italic}
.note,.muted,.headers{color:var(--muted);font-size:.9em}.media{font-weight:400;text-transform:none;letter-spacing:0}
@media (max-width:900px){nav{position:static;width:auto;border-right:0;border-bottom:1px solid var(--line);max-height:none}main{margin-left:0;padding:1.2rem}}
`

/** The CSP source for the one inline stylesheet: nothing else may load or run. */
export const DOCS_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect x='1' y='3' width='14' height='11' rx='2' fill='%232457c5'/%3E%3Crect x='1' y='3' width='14' height='3' fill='%231d2430'/%3E%3C/svg%3E"

export function renderDocsPage(document: OpenApiDocument): string {
  const basePath = new URL(document.servers?.[0]?.url ?? 'http://localhost/').pathname.replace(/\/$/, '')
  const description = renderMarkdown(document.info.description ?? '', { idPrefix: '', topLevel: 2 })
  const groups = groupByTag(document)
  const schemaNames = Object.keys(document.components?.schemas ?? {})
  const title = `${document.info.title} reference`
  const server = document.servers?.[0]?.url
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="icon" href="${FAVICON}">
<style>${STYLE}</style>
</head>
<body>
${nav(description.headings, groups, schemaNames)}
<main id="top">
<h1>${esc(title)}</h1>
<p class="subtitle">Version ${esc(document.info.version)}${server ? ` · Base address <code>${esc(server)}</code>` : ''} · <a href="${esc(basePath)}/openapi.json">OpenAPI document</a></p>
${description.html}
${groups
  .map(
    (g) => `<section id="${esc(tagId(g.name))}">
<h2>${esc(capitalize(g.name))}</h2>
${g.description ? `<p>${renderInline(g.description)}</p>` : ''}
${g.ops.map((op) => renderOperation(op, basePath)).join('\n')}
</section>`,
  )
  .join('\n')}
<section id="schemas">
<h2>Schemas</h2>
${renderSchemas(document)}
</section>
</main>
</body>
</html>
`
}
