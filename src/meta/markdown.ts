// The small subset of Markdown the API descriptions use: headings, paragraphs, pipe tables, lists, fenced
// code, and inline code, bold and links. Every piece of text goes through ghtml's escaping `${…}` before any
// markup is added, so no description can inject HTML; raw HTML in the source shows up as text. Only what
// escaping cannot know is here: which links are safe, and the `**bold**` marks, found in text already escaped
// (escaping leaves asterisks as they are).
import { html } from 'ghtml'

/** Only same-document, same-origin and http(s) targets become links; anything else (javascript:...) stays text. */
const SAFE_HREF = /^(https?:\/\/|\/(?!\/)|#)[^\s]*$/

function inlineText(text: string): string {
  let out = ''
  let rest = text
  const link = /\[([^\]]+)\]\(([^)\s]+)\)/
  for (let match = link.exec(rest); match; match = link.exec(rest)) {
    out += emphasis(rest.slice(0, match.index))
    const [whole, label = '', href = ''] = match
    out += SAFE_HREF.test(href) ? html`<a href="${href}">!${emphasis(label)}</a>` : emphasis(whole)
    rest = rest.slice(match.index + whole.length)
  }
  return out + emphasis(rest)
}

function emphasis(text: string): string {
  return html`${text}`.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
}

/** Inline markup of one line or paragraph: code spans first, so nothing inside them is interpreted. */
export function renderInline(text: string): string {
  return text
    .split(/(`[^`]+`)/)
    .map((part) =>
      part.length > 2 && part.startsWith('`') && part.endsWith('`')
        ? html`<code>${part.slice(1, -1)}</code>`
        : inlineText(part),
    )
    .join('')
}

export interface Heading {
  level: number
  text: string
  id: string
}

export function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'section'
  )
}

const HEADING = /^(#{1,6})\s+(.+?)\s*#*$/
const FENCE = /^```/
const BULLET = /^\s*[-*]\s+(.*)$/
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/
const TABLE_SEPARATOR = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/

function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim())
}

function startsBlock(line: string, next: string | undefined): boolean {
  return (
    HEADING.test(line) ||
    FENCE.test(line) ||
    BULLET.test(line) ||
    NUMBERED.test(line) ||
    (line.trim().startsWith('|') && next !== undefined && TABLE_SEPARATOR.test(next))
  )
}

export interface RenderedMarkdown {
  html: string
  headings: Heading[]
}

/**
 * Renders `markdown`. Heading ids get `idPrefix`, and levels are shifted so that the source's top level
 * becomes `<h{topLevel}>`.
 */
export function renderMarkdown(
  markdown: string,
  options: { idPrefix: string; topLevel?: number },
): RenderedMarkdown {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n')
  const sourceTop = Math.min(7, ...lines.map((l) => HEADING.exec(l)?.[1]?.length ?? 7))
  const shift = (options.topLevel ?? sourceTop) - sourceTop
  const headings: Heading[] = []
  const used = new Set<string>()
  const out: string[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i] ?? ''
    const next = lines[i + 1]
    const heading = HEADING.exec(line)
    if (line.trim() === '') {
      i++
    } else if (heading) {
      const level = Math.min(6, Math.max(1, (heading[1]?.length ?? 1) + shift))
      const text = heading[2] ?? ''
      let id = `${options.idPrefix}${slug(text)}`
      for (let n = 2; used.has(id); n++) id = `${options.idPrefix}${slug(text)}-${n}`
      used.add(id)
      headings.push({ level, text, id })
      out.push(html`<h${level} id="${id}">!${renderInline(text)}</h${level}>`)
      i++
    } else if (FENCE.test(line)) {
      const code: string[] = []
      for (i++; i < lines.length && !FENCE.test(lines[i] ?? ''); i++) code.push(lines[i] ?? '')
      i++
      out.push(html`<pre><code>${code.join('\n')}</code></pre>`)
    } else if (line.trim().startsWith('|') && next !== undefined && TABLE_SEPARATOR.test(next)) {
      const head = cells(line)
      const rows: string[][] = []
      for (i += 2; i < lines.length && (lines[i] ?? '').trim().startsWith('|'); i++)
        rows.push(cells(lines[i] ?? ''))
      out.push(
        html`<div class="docs-scroll"><table><thead><tr>!${head.map((c) => html`<th>!${renderInline(c)}</th>`)}</tr></thead><tbody>!${rows.map(
          (r) =>
            html`<tr>!${head.map((label, j) => html`<td data-label="${label.replace(/[\u0060*]/g, '')}">!${renderInline(r[j] ?? '')}</td>`)}</tr>`,
        )}</tbody></table></div>`,
      )
    } else if (BULLET.test(line) || NUMBERED.test(line)) {
      const pattern = BULLET.test(line) ? BULLET : NUMBERED
      const items: string[] = []
      while (i < lines.length) {
        const current = lines[i] ?? ''
        const item = pattern.exec(current)
        if (item) items.push(item[1] ?? '')
        else if (current.trim() !== '' && /^\s/.test(current) && items.length > 0) {
          items[items.length - 1] += ` ${current.trim()}`
        } else break
        i++
      }
      const tag = pattern === BULLET ? 'ul' : 'ol'
      out.push(html`<${tag}>!${items.map((item) => html`<li>!${renderInline(item)}</li>`)}</${tag}>`)
    } else {
      const paragraph: string[] = []
      while (
        i < lines.length &&
        (lines[i] ?? '').trim() !== '' &&
        (paragraph.length === 0 || !startsBlock(lines[i] ?? '', lines[i + 1]))
      ) {
        paragraph.push((lines[i] ?? '').trim())
        i++
      }
      out.push(html`<p>!${renderInline(paragraph.join(' '))}</p>`)
    }
  }
  return { html: out.join('\n'), headings }
}
