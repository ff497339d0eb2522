// A bounded, per-process cache of what was read from the database, each entry stamped with an epoch of Db
// (credentialEpoch, metadataEpoch) taken before the read. An entry is served only while that epoch is
// current, so a change committed since, by any process, is never hidden; and only while it is younger than
// the cache's maximum age, a bound on what a failure of the change notifications that nobody noticed could
// cost. When full, the entry used least recently goes first, so the entries of busy clients stay.
interface Entry<Value> {
  value: Value
  epoch: number
  readAt: number
}

export class EpochCache<Value> {
  readonly #entries = new Map<string, Entry<Value>>()
  readonly #maxEntries: number
  readonly #maxAgeMs: number

  constructor(options: { maxEntries: number; maxAgeMs: number }) {
    this.#maxEntries = options.maxEntries
    this.#maxAgeMs = options.maxAgeMs
  }

  /** The value stored under `key` if it was read in `epoch` less than the maximum age before `now`. */
  get(key: string, epoch: number, now: number): Value | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    this.#entries.delete(key)
    if (entry.epoch !== epoch || now - entry.readAt >= this.#maxAgeMs) return undefined
    // Re-inserted to keep the least recently used entry first.
    this.#entries.set(key, entry)
    return entry.value
  }

  /** Stores a value read at `now` after `epoch` was taken. A NaN epoch (changes unknown) stores nothing. */
  set(key: string, value: Value, epoch: number, now: number): void {
    if (Number.isNaN(epoch)) return
    this.#entries.delete(key)
    this.#entries.set(key, { value, epoch, readAt: now })
    if (this.#entries.size > this.#maxEntries)
      this.#entries.delete(this.#entries.keys().next().value as string)
  }

  delete(key: string): void {
    this.#entries.delete(key)
  }

  deleteWhere(test: (value: Value) => boolean): void {
    for (const [key, entry] of this.#entries) if (test(entry.value)) this.#entries.delete(key)
  }
}
