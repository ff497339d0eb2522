// Rendered pages kept in memory, by a key that names everything they show, so that a page viewed again and
// again (a share link passed around) is rendered and encoded once: that cost about as much as the rest of
// its request. The caller makes the key; a page whose content changed gets a new key, and the old entry ages
// out. Bounded by bytes; the oldest entry goes first. A hit does not move its entry: re-inserting into a
// full Map makes V8 rehash it (see db/read-path/epoch-cache.ts), and a busy page that ages out is simply
// rendered once more.

/** Rendered pages at most, in bytes, per process. */
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024

export class PageCache {
  readonly #maxBytes: number
  readonly #pages = new Map<string, Buffer>()
  #bytes = 0

  constructor(maxBytes = DEFAULT_MAX_BYTES) {
    this.#maxBytes = maxBytes
  }

  get(key: string): Buffer | undefined {
    return this.#pages.get(key)
  }

  /** Keeps the page under `key` (unless it alone is over the bound) and returns it, encoded. */
  set(key: string, html: string): Buffer {
    const page = Buffer.from(html)
    if (page.length > this.#maxBytes || this.#pages.has(key)) return page
    this.#pages.set(key, page)
    this.#bytes += page.length
    for (const [oldest, old] of this.#pages) {
      if (this.#bytes <= this.#maxBytes) break
      this.#pages.delete(oldest)
      this.#bytes -= old.length
    }
    return page
  }
}
