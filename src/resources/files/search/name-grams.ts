// The pieces of the name index (name-index.repository.ts) that involve no database: how a name is folded for a
// case-insensitive match, which grams of it are indexed, and the sets of slots a block keeps for each gram.

/**
 * Files per block: a block keeps, for each gram, the set of its files holding it, as a list of 2-byte slots, or
 * a bitmap of BLOCK_SIZE bits once the list would be as long. A search reads a row per block for each of its
 * grams, so the fewer blocks the less it reads: at this size, 153 blocks for 10,000,000 files. Changing it
 * needs the index rebuilt (`NameIndex.rebuild`); a slot must fit in 2 bytes.
 */
export const BLOCK_SIZE = 65_536
/**
 * Files added to the index at a time: the newest block is written a chunk at a time as it fills, its rows
 * extended. Until its chunk is written, a search reads a file's row itself, which every search does for the
 * files after the index: so this bounds that read (each name tested, about a millisecond for 4,096 on SQLite),
 * against the writes of a chunk (the block's rows of its grams, written again).
 */
export const CHUNK_SIZE = 1024
const BITMAP_BYTES = BLOCK_SIZE / 8
/** The longest gram indexed as itself: a query of three characters or more is looked up by its trigrams. */
const GRAM_LENGTH = 3
/**
 * Runs of four characters are indexed too, hashed into this many buckets, each a gram (`quadGram`): trigrams
 * alone cannot tell where a name holds them, and a name holding a query's trigrams apart is a candidate. The
 * benchmark's "report-00": "t-0" is in every name and "-00" in one hash in 256 (report-0712345-00c1a2f3.pdf),
 * so the first page read the rows of 3,515 such names (on PostgreSQL, 6 to 9 ms a thousand) before the oldest
 * names, which match; with the bucket of "t-00", 56. Hashed, a block gains at most this many rows whatever the
 * names; a bucket holds, besides the names with its runs, one in seventy of the benchmark's names (median; a
 * name of 27 characters has 24 runs, and a longer name is in more buckets). Changing the count or the hash
 * needs the index rebuilt (a migration, as 0026).
 */
const QUAD_BUCKETS = 1024

/**
 * A name or query as the search compares them: in NFC (a precomposed é and e with a combining accent are one
 * letter), upper-cased then lower-cased, which folds case as Unicode's full case folding does for nearly every
 * letter, those whose folding is longer too (ß and ẞ to ss, ﬁ to fi); the final sigma ς is σ, and the Turkish
 * letters fold as elsewhere (ı and I to i, İ to i with a combining dot, which i finds). Accents are kept: e does
 * not match é.
 */
export function foldName(text: string): string {
  return text.normalize('NFC').toUpperCase().toLowerCase().replaceAll('ς', 'σ')
}

/**
 * The distinct grams of a folded text: every run of one, two and three characters (code points), and the
 * bucket of every run of four (`quadGram`).
 */
export function gramsOf(folded: string): Set<string> {
  const grams = new Set<string>()
  forEachGram(folded, (gram) => grams.add(gram))
  return grams
}

/** Calls `visit` with every gram of a folded text, in order of length, a gram as often as it occurs. */
export function forEachGram(folded: string, visit: (gram: string) => void): void {
  // Without surrogate pairs (nearly every name), code points are UTF-16 units: no array of characters needed.
  if (!SURROGATE.test(folded)) {
    for (let length = 1; length <= GRAM_LENGTH; length++) {
      for (let i = 0; i + length <= folded.length; i++) visit(folded.substring(i, i + length))
    }
    for (let i = 0; i + GRAM_LENGTH < folded.length; i++) visit(quadGram(folded, i, i + GRAM_LENGTH + 1))
    return
  }
  const chars = [...folded]
  for (let length = 1; length <= GRAM_LENGTH; length++) {
    for (let i = 0; i + length <= chars.length; i++) visit(chars.slice(i, i + length).join(''))
  }
  for (let i = 0; i + GRAM_LENGTH < chars.length; i++) {
    const run = chars.slice(i, i + GRAM_LENGTH + 1).join('')
    visit(quadGram(run, 0, run.length))
  }
}

const SURROGATE = /[\uD800-\uDFFF]/

/**
 * The grams a folded query is looked up by: its trigrams and the buckets of its runs of four, or the query
 * itself when shorter. A name holding the query holds all of them; the reverse is checked on each candidate's
 * name.
 */
export function queryGrams(folded: string): string[] {
  const chars = [...folded]
  if (chars.length <= GRAM_LENGTH) return [folded]
  const grams = new Set<string>()
  for (let i = 0; i + GRAM_LENGTH <= chars.length; i++) grams.add(chars.slice(i, i + GRAM_LENGTH).join(''))
  for (let i = 0; i + GRAM_LENGTH < chars.length; i++) {
    const run = chars.slice(i, i + GRAM_LENGTH + 1).join('')
    grams.add(quadGram(run, 0, run.length))
  }
  return [...grams]
}

/**
 * The gram of the bucket of a run of four characters (`text` from `start` to `end`, UTF-16 units): FNV-1a of
 * its units, as a control character and four hex digits, longer than any gram of a name.
 */
function quadGram(text: string, start: number, end: number): string {
  let hash = 0x811c9dc5
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return `\u0002${((hash >>> 0) % QUAD_BUCKETS).toString(16).padStart(4, '0')}`
}

/**
 * The gram under which a block keeps the files of a folder: longer than any gram of a name, and starting
 * with a control character no folded gram of a name starts with alongside a folder id.
 */
export const folderGram = (folderId: string) => `\u0001${folderId}`

/** A set of slots (0 to BLOCK_SIZE - 1) of one block, as bits. */
export type SlotSet = Uint32Array

export const emptySlots = (): SlotSet => new Uint32Array(BLOCK_SIZE / 32)

export function addSlot(slots: SlotSet, slot: number): void {
  slots[slot >>> 5] = (slots[slot >>> 5] as number) | (1 << (slot & 31))
}

/** The set's slots, highest (newest) first. */
export function slotsDescending(slots: SlotSet): number[] {
  const found: number[] = []
  for (let i = slots.length - 1; i >= 0; i--) {
    let word = slots[i] as number
    while (word !== 0) {
      const bit = 31 - Math.clz32(word)
      found.push(i * 32 + bit)
      word &= ~(1 << bit)
    }
  }
  return found
}

export function slotCount(slots: SlotSet): number {
  let count = 0
  for (let word of slots) {
    word -= (word >>> 1) & 0x55555555
    word = (word & 0x33333333) + ((word >>> 2) & 0x33333333)
    count += (((word + (word >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24
  }
  return count
}

/**
 * The stored form of a set: its slots as 2-byte little-endian numbers in ascending order, or the bitmap
 * itself (BITMAP_BYTES) when the list would be as long or longer. The length tells which.
 */
export function encodeSlots(slots: SlotSet): Uint8Array {
  if (slotCount(slots) * 2 >= BITMAP_BYTES) {
    const bitmap = new Uint8Array(BITMAP_BYTES)
    const view = new DataView(bitmap.buffer)
    for (const [i, word] of slots.entries()) view.setUint32(i * 4, word, true)
    return bitmap
  }
  return encodeAscending(slotsDescending(slots).reverse())
}

/** `encodeSlots` of the set of these slots, given in ascending order, each once. */
export function encodeAscending(slots: number[]): Uint8Array {
  if (slots.length * 2 >= BITMAP_BYTES) {
    const set = emptySlots()
    for (const slot of slots) addSlot(set, slot)
    return encodeSlots(set)
  }
  const list = new Uint8Array(slots.length * 2)
  const view = new DataView(list.buffer)
  for (const [i, slot] of slots.entries()) view.setUint16(i * 2, slot, true)
  return list
}

export function decodeSlots(stored: Uint8Array): SlotSet {
  const slots = emptySlots()
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength)
  if (stored.byteLength === BITMAP_BYTES) {
    for (let i = 0; i < slots.length; i++) slots[i] = view.getUint32(i * 4, true)
    return slots
  }
  for (let at = 0; at + 2 <= stored.byteLength; at += 2) addSlot(slots, view.getUint16(at, true))
  return slots
}

/**
 * The slots up to `highest` that every one of these stored sets holds (`encodeSlots`'s form), highest (newest)
 * first, found as they are asked for: a search that needs a page of a block's matches goes no further. Bitmaps
 * against bitmaps: a byte at a time. With lists: they leapfrog (`ListsWalk`), each walked down from where it
 * was to its highest slot not above the candidate, which becomes the candidate when it is lower; so each list
 * is read once, and the bitmaps only at the slots of the shortest list. (It walked the shortest list and
 * looked each slot up in the others, 2.3 ms of a 5.3 ms search of 10,000,000 files; this takes 1.3.)
 */
export function* slotsInAll(stored: Uint8Array[], highest = BLOCK_SIZE - 1): Generator<number> {
  if (stored.length === 0) return
  const lists = stored
    .filter((set) => set.byteLength !== BITMAP_BYTES)
    .sort((a, b) => a.byteLength - b.byteLength)
    .map(slotList)
  const bitmaps = stored.filter((set) => set.byteLength === BITMAP_BYTES)
  if (lists.length === 0) {
    const [first, ...others] = bitmaps as [Uint8Array, ...Uint8Array[]]
    for (let byte = highest >>> 3; byte >= 0; byte--) {
      let bits = first[byte] as number
      if (byte === highest >>> 3) bits &= (2 << (highest & 7)) - 1
      for (const set of others) bits &= set[byte] as number
      for (let bit = 7; bits !== 0 && bit >= 0; bit--) {
        if (bits & (1 << bit)) yield byte * 8 + bit
      }
    }
    return
  }
  // The walk is a plain function's: the generator's own loop, resumed at each yield, ran at half the speed.
  const walk = new ListsWalk(lists, bitmaps, highest)
  for (let slot = walk.next(); slot >= 0; slot = walk.next()) yield slot
}

/** Lists leapfrogging down, as `slotsInAll` says. */
class ListsWalk {
  readonly #lists: Uint16Array[]
  readonly #bitmaps: Uint8Array[]
  /** Each list's place: the index of its highest slot not above the candidate, once walked to it. */
  readonly #at: Int32Array
  #candidate: number

  constructor(lists: Uint16Array[], bitmaps: Uint8Array[], highest: number) {
    this.#lists = lists
    this.#bitmaps = bitmaps
    this.#at = Int32Array.from(lists, (list) => indexAtMost(list, highest))
    this.#candidate = highest
  }

  /**
   * The next slot all the sets hold, or -1 when none is left. The first list (the shortest) proposes each
   * candidate; the bitmaps, a bit each, turn most away before the other lists are walked to it.
   */
  next(): number {
    const lists = this.#lists
    const at = this.#at
    let candidate = this.#candidate
    candidates: while (candidate >= 0) {
      for (let k = 0; k < lists.length; k++) {
        const list = lists[k] as Uint16Array
        let j = at[k] as number
        while (j >= 0 && (list[j] as number) > candidate) j--
        at[k] = j
        if (j < 0) break candidates
        const slot = list[j] as number
        if (slot !== candidate) {
          candidate = slot
          continue candidates
        }
        if (k === 0 && !this.#inBitmaps(slot)) {
          candidate = slot - 1
          continue candidates
        }
      }
      this.#candidate = candidate - 1
      return candidate
    }
    this.#candidate = -1
    return -1
  }

  #inBitmaps(slot: number): boolean {
    for (const bitmap of this.#bitmaps) {
      if (((bitmap[slot >>> 3] as number) & (1 << (slot & 7))) === 0) return false
    }
    return true
  }
}

/**
 * A stored list's slots as numbers, without copying when its bytes are aligned (node:sqlite's are; a driver's
 * Buffer may be a slice of a shared one at any offset). The bytes are little-endian, as are the processors
 * Node runs on.
 */
function slotList(list: Uint8Array): Uint16Array {
  return list.byteOffset % 2 === 0
    ? new Uint16Array(list.buffer, list.byteOffset, list.byteLength / 2)
    : new Uint16Array(list.slice().buffer)
}

/** The slots of a stored set (`encodeSlots`'s form), ascending. */
export const slotsAscending = (stored: Uint8Array): number[] =>
  stored.byteLength === BITMAP_BYTES ? bitmapSlots(stored) : listSlots(stored)

/** The slots of a stored bitmap, ascending: slot n is bit n % 8 of byte n / 8 (little-endian words). */
function bitmapSlots(bitmap: Uint8Array): number[] {
  const slots: number[] = []
  for (let byte = 0; byte < bitmap.byteLength; byte++) {
    const bits = bitmap[byte] as number
    if (bits === 0) continue
    for (let bit = 0; bit < 8; bit++) if (bits & (1 << bit)) slots.push(byte * 8 + bit)
  }
  return slots
}

/** The slots of a stored list, ascending. */
function listSlots(list: Uint8Array): number[] {
  const slots: number[] = new Array(list.byteLength / 2)
  for (let i = 0; i < slots.length; i++) slots[i] = listSlot(list, i)
  return slots
}

const listSlot = (list: Uint8Array, i: number) => (list[2 * i] as number) | ((list[2 * i + 1] as number) << 8)

/** The index of the highest slot of a list that is at most `slot`, or -1 when none is. */
function indexAtMost(list: Uint16Array, slot: number): number {
  let low = 0
  let high = list.length - 1
  while (low <= high) {
    const middle = (low + high) >>> 1
    if ((list[middle] as number) <= slot) low = middle + 1
    else high = middle - 1
  }
  return high
}
