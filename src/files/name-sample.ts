// Which part of a search query to look up in the trigram index.
//
// Both engines' trigram indexes read the list of every name holding each trigram of the pattern they are given,
// so a trigram that most names hold costs the most and narrows the least: measured on 2,000,000 names, the
// index took 33 ms (PostgreSQL) and 26–67 ms (SQLite) for `report-0500001`, whose first six trigrams are in
// every name, against 1 ms for `0500001`, which finds the same one name. So the index is asked for the query's
// part whose trigrams are all uncommon, and the candidates it gives are tested against the whole query.
// How common a trigram is comes from a random sample of all accounts' names (the indexes hold all accounts'),
// read again every so often; a sample that is out of date makes a search slower, never wrong.

/**
 * Names in the sample, and how long it serves before it is read again. Enough to tell 5 % from 2 or 10; few
 * enough to read in 21–33 ms on SQLite among 2,000,000 files, on the server's one thread (5,000: 31–72 ms).
 */
export const SAMPLE_NAMES = 2_000
const SAMPLE_FOR_MS = 10 * 60_000
/**
 * A trigram held by more than this share of the names is left out of the index's lookup, when it can be: each
 * one costs a read of that share of the index's names. On 2,000,000 names, with the trigrams of `report-05` in
 * 10 % of them left in, `report-0500001` took 14 ms; out, 1.
 */
const COMMON_SHARE = 0.05

/** The trigrams of a text as the indexes see them: each run of three characters, lower-cased. */
export function trigramsOf(text: string): string[] {
  const chars = [...text.toLowerCase()]
  const trigrams: string[] = []
  for (let i = 0; i + 3 <= chars.length; i++) trigrams.push(chars.slice(i, i + 3).join(''))
  return trigrams
}

/**
 * The part of `query` to look the matches up by: its longest run of characters whose trigrams are all held by
 * at most COMMON_SHARE of the names (the rarest such run when two are as long), or the whole query when it has
 * no such run or is one. `share(trigram)` says how many of the names hold a trigram, from 0 to 1.
 */
export function selectivePart(query: string, share: (trigram: string) => number): string {
  const chars = [...query]
  const trigrams = trigramsOf(query)
  let best: { start: number; end: number; rarest: number } | undefined
  let start = -1
  for (let i = 0; i <= trigrams.length; i++) {
    const uncommon = i < trigrams.length && share(trigrams[i] as string) <= COMMON_SHARE
    if (uncommon && start < 0) start = i
    if (uncommon || start < 0) continue
    // Trigrams start..i-1 are uncommon: characters start..i+1.
    const run = { start, end: i + 2, rarest: Math.min(...trigrams.slice(start, i).map(share)) }
    const longer = !best || run.end - run.start > best.end - best.start
    const asLong = best && run.end - run.start === best.end - best.start
    if (longer || (asLong && run.rarest < (best?.rarest ?? 1))) best = run
    start = -1
  }
  return best ? chars.slice(best.start, best.end).join('') : query
}

/**
 * How common each trigram is among a random sample of all names. `read` gives the sample; the first lookup
 * waits for it, later ones use the last sample while the next is read.
 */
export class NameSample {
  readonly #read: () => Promise<string[]>
  /** Trigram → how many names of the sample hold it. */
  #holding = new Map<string, number>()
  #names = 0
  #readAt = Number.NEGATIVE_INFINITY
  #reading: Promise<void> | undefined

  constructor(read: () => Promise<string[]>) {
    this.#read = read
  }

  /** The sample, read if it never was; a stale one is read again in the background. */
  async ready(): Promise<this> {
    if (Date.now() - this.#readAt > SAMPLE_FOR_MS && !this.#reading) {
      // A sample that cannot be read leaves the last one (or none: every trigram uncommon, the whole query
      // looked up, as before there were samples); the search's own statements report what is wrong.
      this.#reading = this.#refresh()
        .catch(() => {})
        .finally(() => {
          this.#reading = undefined
        })
    }
    if (this.#names === 0 && this.#reading) await this.#reading
    return this
  }

  /** The share of names holding the trigram, from 0 to 1; 0 while the sample is empty. */
  share(trigram: string): number {
    return this.#names === 0 ? 0 : (this.#holding.get(trigram) ?? 0) / this.#names
  }

  async #refresh(): Promise<void> {
    // Read first: a failed read keeps the last sample, and is tried again after the same while.
    this.#readAt = Date.now()
    const names = await this.#read()
    const holding = new Map<string, number>()
    for (const name of names) {
      for (const trigram of new Set(trigramsOf(name))) holding.set(trigram, (holding.get(trigram) ?? 0) + 1)
    }
    this.#holding = holding
    this.#names = names.length
  }
}
