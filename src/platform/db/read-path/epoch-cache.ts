// A bounded, per-process cache of what was read from the database, each entry stamped with the epoch
// (Db.changeEpoch) taken before the read. An entry is served only while that epoch is current, so a change
// committed since, by any process, is never hidden; and only while it is younger than the cache's maximum
// age, a bound on what a failure of the change notifications that nobody noticed could cost. When full,
// the entry used least recently goes first, so the entries of busy clients stay.
//
// The order of use is a linked list beside the Map, not the Map's own order: deleting and re-inserting a key
// to move it last costs V8 a rehash of the whole table once it is full of such holes, 10 to 25 µs per hit
// in a cache of 10,000 entries, where moving a list node costs nanoseconds.
interface Entry<Value> {
  key: string
  value: Value
  epoch: number
  readAt: number
  /** The neighbours in order of use: `newer` toward the most recently used end. */
  newer: Entry<Value> | undefined
  older: Entry<Value> | undefined
}

export class EpochCache<Value> {
  readonly #entries = new Map<string, Entry<Value>>()
  readonly #maxEntries: number
  readonly #maxAgeMs: number
  #newest: Entry<Value> | undefined
  #oldest: Entry<Value> | undefined

  constructor(options: { maxEntries: number; maxAgeMs: number }) {
    this.#maxEntries = options.maxEntries
    this.#maxAgeMs = options.maxAgeMs
  }

  /** The value stored under `key` if it was read in `epoch` less than the maximum age before `now`. */
  get(key: string, epoch: number, now: number): Value | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (entry.epoch !== epoch || now - entry.readAt >= this.#maxAgeMs) {
      this.#remove(entry)
      return undefined
    }
    if (entry !== this.#newest) {
      this.#unlink(entry)
      this.#pushNewest(entry)
    }
    return entry.value
  }

  /** Stores a value read at `now` after `epoch` was taken. A NaN epoch (changes unknown) stores nothing. */
  set(key: string, value: Value, epoch: number, now: number): void {
    if (Number.isNaN(epoch)) return
    let entry = this.#entries.get(key)
    if (entry) {
      this.#unlink(entry)
      entry.value = value
      entry.epoch = epoch
      entry.readAt = now
    } else {
      entry = { key, value, epoch, readAt: now, newer: undefined, older: undefined }
      this.#entries.set(key, entry)
    }
    this.#pushNewest(entry)
    if (this.#entries.size > this.#maxEntries && this.#oldest) this.#remove(this.#oldest)
  }

  delete(key: string): void {
    const entry = this.#entries.get(key)
    if (entry) this.#remove(entry)
  }

  deleteWhere(test: (value: Value) => boolean): void {
    for (const entry of this.#entries.values()) if (test(entry.value)) this.#remove(entry)
  }

  #remove(entry: Entry<Value>): void {
    this.#unlink(entry)
    this.#entries.delete(entry.key)
  }

  #unlink(entry: Entry<Value>): void {
    if (entry.newer) entry.newer.older = entry.older
    else this.#newest = entry.older
    if (entry.older) entry.older.newer = entry.newer
    else this.#oldest = entry.newer
    entry.newer = undefined
    entry.older = undefined
  }

  #pushNewest(entry: Entry<Value>): void {
    entry.older = this.#newest
    if (this.#newest) this.#newest.newer = entry
    this.#newest = entry
    this.#oldest ??= entry
  }
}
