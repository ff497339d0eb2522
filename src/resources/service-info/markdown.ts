// The API descriptions' Markdown, parsed by marked (GitHub-flavoured, so pipe tables too) and rendered with
// the guarantees the page needs, which marked leaves to its user (it does not sanitise):
// - every piece of text goes through ghtml's escaping `${…}`, so no description can inject HTML; raw HTML is
//   not recognised as such (its tokenizers are turned off), so it stays in its paragraph and shows as text;
// - only safe targets become links (http(s), same-origin `/…`, `#…`); any other link, and every image (it
//   would fetch from elsewhere), shows as its source text.
// What stays written here is what is particular to this page: heading ids and levels for its contents, and the
// tables' scrolling wrapper and `data-label`s that the stylesheet lays out as cards on a narrow screen.
import { html } from 'ghtml'
import { Marked, type MarkedExtension, type Tokens } from 'marked'

/** Only same-document, same-origin and http(s) targets become links; anything else (javascript:...) stays text. */
const SAFE_HREF = /^(https?:\/\/|\/(?!\/)|#)[^\s]*$/

const SAFE_MARKDOWN: MarkedExtension = {
  gfm: true,
  tokenizer: {
    // Returning nothing (rather than false, which falls back to marked's own) leaves the source to the
    // paragraph and text tokenizers, so `<script>` is text like any other.
    html: () => undefined,
    tag: () => undefined,
  },
  renderer: {
    text(token) {
      return 'tokens' in token && token.tokens ? this.parser.parseInline(token.tokens) : html`${token.text}`
    },
    // Unreachable with the tokenizers above; kept so that raw HTML could never pass through unescaped.
    html: ({ raw }) => html`${raw}`,
    codespan: ({ text }) => html`<code>${text}</code>`,
    code: ({ text }) => html`<pre><code>${text}</code></pre>`,
    link(token) {
      if (!SAFE_HREF.test(token.href)) return html`${token.raw}`
      const title = token.title ? html` title="${token.title}"` : ''
      return html`<a href="${token.href}"!${title}>!${this.parser.parseInline(token.tokens)}</a>`
    },
    image: ({ raw }) => html`${raw}`,
    table(token) {
      const cell = (c: Tokens.TableCell) => this.parser.parseInline(c.tokens)
      // The stylesheet shows each cell's column name before it when a table becomes cards on a phone.
      const labels = token.header.map((c) => c.text.replace(/[\u0060*]/g, ''))
      return html`<div class="docs-scroll"><table><thead><tr>!${token.header.map((c) => html`<th>!${cell(c)}</th>`)}</tr></thead><tbody>!${token.rows.map(
        (row) =>
          html`<tr>!${row.map((c, j) => html`<td data-label="${labels[j] ?? ''}">!${cell(c)}</td>`)}</tr>`,
      )}</tbody></table></div>`
    },
  },
}

const inlineMarkdown = new Marked(SAFE_MARKDOWN)

/** Inline markup of one line or paragraph (a table cell's description): code, bold, links. */
export function renderInline(text: string): string {
  return inlineMarkdown.parseInline(text, { async: false })
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
  const headings: Heading[] = []
  const used = new Set<string>()
  let shift = 0
  // An instance per document: its heading renderer numbers the ids and shifts the levels of this one.
  const marked = new Marked(SAFE_MARKDOWN, {
    renderer: {
      heading({ depth, text, tokens }) {
        const level = Math.min(6, Math.max(1, depth + shift))
        let id = `${options.idPrefix}${slug(text)}`
        for (let n = 2; used.has(id); n++) id = `${options.idPrefix}${slug(text)}-${n}`
        used.add(id)
        headings.push({ level, text, id })
        return html`<h${level} id="${id}">!${this.parser.parseInline(tokens)}</h${level}>`
      },
    },
  })
  const tokens = marked.lexer(markdown)
  let sourceTop = 6
  marked.walkTokens(tokens, (token) => {
    if (token.type === 'heading') sourceTop = Math.min(sourceTop, (token as Tokens.Heading).depth)
  })
  shift = (options.topLevel ?? sourceTop) - sourceTop
  return { html: marked.parser(tokens), headings }
}
