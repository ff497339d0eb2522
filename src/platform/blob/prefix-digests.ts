// The digests (SHA-256 and CRC-32) of multipart uploads, computed while their parts arrive so that completing one
// need not read the whole blob back. Parts land in any order; each upload's hash covers the longest run of parts 1, 2, 3... that
// has landed, read back from the store (the page cache, so just after their write) with one buffer reused for
// every read. This is only a head start: completion checks that the parts hashed are the first ones listed and
// hashes the rest itself, or everything when they are not (parts written by another process, a part written
// again, gaps in the numbers, a process restarted).
import type { WrittenPart } from './blob-store.ts'
import { Digester } from './content-digest.ts'

/**
 * Reads a landed part back through `buffer`: each piece yielded is a view of it, valid until the next is
 * pulled.
 */
export type PartReader = (part: WrittenPart, buffer: Buffer) => AsyncIterable<Buffer>

/** How far an upload's hash got: `hash` covers exactly `parts`, in order. */
export interface PrefixDigest {
  hash: Digester
  parts: WrittenPart[]
}

/** Read size: large enough for few system calls, small enough to keep one buffer around for good. */
export const READ_BYTES = 1024 * 1024

/** An upload that sees no part for this long is forgotten: it was abandoned, or completes elsewhere. */
const IDLE_MS = 10 * 60_000

interface Tracked extends PrefixDigest {
  read: PartReader
  /** Landed parts beyond the hashed run, by number: the last write of each. */
  waiting: Map<number, WrittenPart>
  /** The read under way, if any. */
  step: Promise<void> | undefined
  stopped: boolean
  idle: NodeJS.Timeout
}

export class PrefixDigests {
  readonly #uploads = new Map<string, Tracked>()
  /** Steps of all uploads run one at a time, sharing this buffer: hashing is bound to the one JS thread anyway. */
  #buffer: Buffer | undefined
  #queue: Promise<void> = Promise.resolve()

  /** A part of upload `id` is durable; `read` reads parts of that upload back. */
  landed(id: string, part: WrittenPart, read: PartReader): void {
    let tracked = this.#uploads.get(id)
    if (!tracked) {
      tracked = {
        hash: new Digester(),
        parts: [],
        read,
        waiting: new Map(),
        step: undefined,
        stopped: false,
        idle: setTimeout(() => this.forget(id), IDLE_MS).unref(),
      }
      this.#uploads.set(id, tracked)
    }
    tracked.idle.refresh()
    if (part.partNumber > tracked.parts.length) tracked.waiting.set(part.partNumber, part)
    this.#advance(tracked)
  }

  /**
   * Stops hashing upload `id` and hands over how far it got, once the read under way is done; undefined when
   * this process has nothing for it.
   */
  async take(id: string): Promise<PrefixDigest | undefined> {
    const tracked = this.#uploads.get(id)
    if (!tracked) return undefined
    this.forget(id)
    // A failed read left the hash as it was before it.
    await tracked.step?.catch(() => {})
    return { hash: tracked.hash, parts: tracked.parts }
  }

  forget(id: string): void {
    const tracked = this.#uploads.get(id)
    if (!tracked) return
    tracked.stopped = true
    clearTimeout(tracked.idle)
    this.#uploads.delete(id)
  }

  #advance(tracked: Tracked): void {
    if (tracked.step || tracked.stopped) return
    const next = tracked.waiting.get(tracked.parts.length + 1)
    if (!next) return
    tracked.waiting.delete(next.partNumber)
    const step = this.#queue.then(async () => {
      if (tracked.stopped) return
      this.#buffer ??= Buffer.allocUnsafe(READ_BYTES)
      // A copy, so that a failed read leaves the hash of the parts before it intact.
      const hash = tracked.hash.copy()
      for await (const piece of tracked.read(next, this.#buffer)) hash.update(piece)
      tracked.hash = hash
      tracked.parts.push(next)
    })
    tracked.step = step
    this.#queue = step.catch(() => {})
    step.then(
      () => {
        tracked.step = undefined
        this.#advance(tracked)
      },
      () => {
        // The upload was completed or aborted meanwhile, or its files are unreadable: completion hashes alone.
        tracked.step = undefined
        tracked.stopped = true
      },
    )
  }
}

/** Whether `digest` covers exactly the first parts of `listed`, so that hashing can go on from there. */
export function coversHeadOf(digest: PrefixDigest, listed: WrittenPart[]): boolean {
  return digest.parts.every(
    (part, i) => part.partNumber === listed[i]?.partNumber && part.etag === listed[i]?.etag,
  )
}
