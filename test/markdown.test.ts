// The descriptions' Markdown is rendered by marked, which does not sanitise: these are the guarantees
// src/resources/service-info/markdown.ts adds to it, checked on the HTML it returns.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { renderInline, renderMarkdown } from '../src/resources/service-info/markdown.ts'

const render = (markdown: string) => renderMarkdown(markdown, { idPrefix: '' }).html

describe('Markdown of the API descriptions', () => {
  test('raw HTML shows as text, in a paragraph, inline or as a block', () => {
    assert.equal(
      render('Run <script>alert(1)</script> now'),
      '<p>Run &#60;script&#62;alert(1)&#60;/script&#62; now</p>\n',
    )
    assert.equal(
      render('<script>alert(1)</script>\n\nnext'),
      '<p>&#60;script&#62;alert(1)&#60;/script&#62;</p>\n<p>next</p>\n',
    )
    assert.equal(
      render('<img src=x onerror=alert(1)>'),
      '<p>&#60;img src&#61;x onerror&#61;alert(1)&#62;</p>\n',
    )
    assert.equal(
      renderInline('a <b onmouseover="x">b</b>'),
      'a &#60;b onmouseover&#61;&#34;x&#34;&#62;b&#60;/b&#62;',
    )
  })

  test('only http(s), same-origin and same-page targets become links; any other shows as its source', () => {
    for (const unsafe of [
      '[x](javascript:alert(1))',
      '[x](data:text/html,hi)',
      '[x](//evil.example/x)',
      '[x](vbscript:msgbox)',
      '<javascript:alert(1)>',
    ]) {
      const rendered = renderInline(unsafe)
      assert.doesNotMatch(rendered, /<a\b/, unsafe)
      assert.equal(rendered, unsafe.replace('<', '&#60;').replace('>', '&#62;'), unsafe)
    }
    assert.equal(
      renderInline('[a](https://example.org/a"b) [b](/docs) [c](#errors)'),
      '<a href="https://example.org/a&#34;b">a</a> <a href="/docs">b</a> <a href="#errors">c</a>',
    )
    assert.equal(renderInline('[**bold**](/x)'), '<a href="/x"><strong>bold</strong></a>')
  })

  test('images are not loaded: they show as their source', () => {
    assert.equal(renderInline('![x](https://evil.example/p.png)'), '![x](https://evil.example/p.png)')
  })

  test('a pipe table is a table in its scrolling wrapper, each cell labelled with its column', () => {
    assert.equal(
      render('| scope | grants |\n|---|---|\n| `files:read` | View **files** |'),
      '<div class="docs-scroll"><table><thead><tr><th>scope</th><th>grants</th></tr></thead><tbody>' +
        '<tr><td data-label="scope"><code>files:read</code></td><td data-label="grants">View <strong>files</strong></td></tr>' +
        '</tbody></table></div>',
    )
  })

  test('code keeps its text as written, escaped', () => {
    assert.equal(render('```js\nif (a < b) run()\n```'), '<pre><code>if (a &#60; b) run()</code></pre>')
    assert.equal(
      renderInline('`<b>` and **`x`**'),
      '<code>&#60;b&#62;</code> and <strong><code>x</code></strong>',
    )
  })

  test('headings get unique prefixed ids, and levels shifted so the top one is the one asked for', () => {
    const { html, headings } = renderMarkdown('# Errors\n\n## Codes\n\n# Errors', {
      idPrefix: 'op-',
      topLevel: 3,
    })
    assert.deepEqual(headings, [
      { level: 3, text: 'Errors', id: 'op-errors' },
      { level: 4, text: 'Codes', id: 'op-codes' },
      { level: 3, text: 'Errors', id: 'op-errors-2' },
    ])
    assert.equal(
      html,
      '<h3 id="op-errors">Errors</h3><h4 id="op-codes">Codes</h4><h3 id="op-errors-2">Errors</h3>',
    )
  })
})
