// Composes the final blob of a multipart upload while its parts arrive, so that `complete` has little left to
// do instead of reading every part back. Parts are appended in order (1, 2, 3...), each handed over in one of
// two ways:
// - taken: a part received whole in memory when its turn had come, written straight into the composition and
//   never staged: its bytes are written once. Only a single process may do this (see BlobApiService), and a
//   part is taken whole or not at all, so a transfer that breaks off mid-part leaves the composition intact.
// - offered: a part staged in the store (it came early, or parts are shared between processes), read back
//   when its turn comes.
// The composition is a guess that the client lists the parts it sent, from number 1 up. `finish` checks the
// guess against the list (parts after those handed over may skip numbers); when it is wrong the composition is
// dropped and the caller composes from the store.
import type { BlobStore } from '../blob/blob-store.ts'
import { ByteMeter, type Digest } from './byte-stream.ts'

export interface PartRef {
  partNumber: number
  etag: string
}

export interface StagedPart extends PartRef {
  key: string
}

interface Handed extends PartRef {
  size: number
  /** Where a staged part is; taken parts carry their bytes instead. */
  key?: string
  chunks?: Uint8Array[]
}

/** Taken parts waiting to be written, at most: bounds the memory a composition holds. */
const MAX_QUEUED_TAKEN = 2

export class Composer {
  readonly fileId: string
  readonly key: string
  readonly #blobs: BlobStore
  readonly #meter: ByteMeter
  readonly #stored: Promise<unknown>
  /** Parts handed over, in order: `#handed[i]` is part i + 1. */
  readonly #handed: Handed[] = []
  /** Staged parts that came before their turn. */
  readonly #early = new Map<number, Handed>()
  readonly #listeners = new Set<() => void>()
  #written = 0
  #queuedTaken = 0
  #end = false
  #failure: Error | undefined

  /** Starts writing `key` (the blob of file `fileId`), at most `limit` bytes, hashed on the way. */
  constructor(blobs: BlobStore, fileId: string, key: string, limit: number) {
    this.#blobs = blobs
    this.fileId = fileId
    this.key = key
    this.#meter = new ByteMeter(limit, { hash: true })
    this.#stored = blobs.put(key, this.#meter.measure(this.#parts()))
    // Observed by finish() or abort(); a composition nobody finishes must not be an unhandled rejection.
    this.#stored.catch((error: Error) => {
      this.#failure ??= error
      this.#changed()
    })
  }

  /** The number of the next part to hand over. */
  get expected(): number {
    return this.#handed.length + 1
  }

  /** The parts taken, which are stored nowhere else. */
  takenParts(): { partNumber: number; size: number }[] {
    return this.#handed.filter((part) => part.chunks !== undefined)
  }

  /** The handed-over part with this number and etag, if any. */
  handed(part: PartRef): { size: number; taken: boolean } | undefined {
    const found = this.#handed[part.partNumber - 1]
    return found?.etag === part.etag ? { size: found.size, taken: found.chunks !== undefined } : undefined
  }

  /**
   * Waits up to `ms` for part `partNumber` to be the one the composition needs next, with room to take it;
   * false when that will not be soon, or ever (the composition failed or ended, or already has that part).
   */
  awaitTurn(partNumber: number, ms: number): Promise<boolean> {
    const ready = () =>
      this.#accepting() && this.expected === partNumber && this.#queuedTaken < MAX_QUEUED_TAKEN
    const hopeless = () => !this.#accepting() || partNumber < this.expected
    if (ready()) return Promise.resolve(true)
    if (hopeless()) return Promise.resolve(false)
    return new Promise<boolean>((resolve) => {
      const check = () => {
        if (ready()) settle(true)
        else if (hopeless()) settle(false)
      }
      const settle = (result: boolean) => {
        clearTimeout(timer)
        this.#listeners.delete(check)
        resolve(result)
      }
      const timer = setTimeout(() => settle(ready()), ms)
      this.#listeners.add(check)
    })
  }

  /** Takes a whole part received in memory; false if it is not the part's turn (the caller stages it). */
  take(part: PartRef, chunks: Uint8Array[]): boolean {
    if (!this.#accepting() || part.partNumber !== this.expected) return false
    const size = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0)
    this.#handed.push({ ...part, size, chunks })
    this.#queuedTaken += 1
    this.#advance()
    return true
  }

  /** A staged part: appended, read back from the store, when its turn comes. */
  offer(part: StagedPart, size: number): void {
    if (!this.#accepting() || part.partNumber < this.expected) return
    this.#early.set(part.partNumber, { ...part, size })
    this.#advance()
  }

  /**
   * Completes the blob with the listed parts (sorted; those not handed over are staged) and returns its size
   * and SHA-256; or undefined, having dropped the composition, when what was handed over is not a prefix of
   * the list, or the composition failed.
   */
  async finish(listed: StagedPart[]): Promise<Digest | undefined> {
    const usable =
      this.#accepting() &&
      this.#handed.length <= listed.length &&
      this.#handed.every(
        (part, i) => part.partNumber === listed[i]?.partNumber && part.etag === listed[i]?.etag,
      )
    if (!usable) {
      await this.abort(new Error('the listed parts differ from the composed ones'))
      return undefined
    }
    for (const part of listed.slice(this.#handed.length)) this.#handed.push({ ...part, size: 0 })
    this.#end = true
    this.#changed()
    try {
      await this.#stored
    } catch {
      return undefined
    }
    return this.#meter.digest()
  }

  /** Stops the composition; the store removes what it had written. */
  async abort(reason: Error): Promise<void> {
    this.#failure ??= reason
    this.#changed()
    await this.#stored.catch(() => {})
  }

  #accepting(): boolean {
    return !this.#failure && !this.#end
  }

  /** Hands over the early parts whose turn has come. */
  #advance(): void {
    for (let part = this.#early.get(this.expected); part; part = this.#early.get(this.expected)) {
      this.#early.delete(part.partNumber)
      this.#handed.push(part)
    }
    this.#changed()
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener()
  }

  #until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve()
    return new Promise((resolve) => {
      const check = () => {
        if (condition()) {
          this.#listeners.delete(check)
          resolve()
        }
      }
      this.#listeners.add(check)
    })
  }

  async *#parts(): AsyncGenerator<Uint8Array> {
    for (;;) {
      await this.#until(() => this.#failure !== undefined || this.#written < this.#handed.length || this.#end)
      if (this.#failure) throw this.#failure
      const part = this.#handed[this.#written]
      if (!part) return
      if (part.chunks) {
        yield* part.chunks
        // The bytes are in the store's hands now; the memory can go.
        part.chunks = []
        this.#queuedTaken -= 1
      } else {
        yield* await this.#blobs.get(part.key as string)
      }
      this.#written += 1
      this.#changed()
    }
  }
}
