// Streams bytes through while counting and hashing them, and refuses to pass more than a limit: the blob
// endpoint learns the size and SHA-256 of a blob in the same pass that stores it.
import { createHash, type Hash } from 'node:crypto'
import { tooLarge } from './errors.ts'

export interface Digest {
  size: number
  /** Null for a multipart upload joined by a store that does not hash it (S3): computed later. */
  sha256: string | null
}

export class ByteMeter {
  readonly #limit: number
  readonly #hash: Hash | undefined
  #size = 0

  constructor(limit: number, options: { hash: boolean }) {
    this.#limit = limit
    this.#hash = options.hash ? createHash('sha256') : undefined
  }

  get size(): number {
    return this.#size
  }

  /** Passes every chunk of `source` on, failing with `file_too_large` once more than the limit went by. */
  async *measure(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      this.#size += chunk.byteLength
      if (this.#size > this.#limit) throw tooLarge(this.#limit)
      this.#hash?.update(chunk)
      yield chunk
    }
  }

  digest(): Digest {
    if (!this.#hash) throw new Error('ByteMeter was created without hashing')
    return { size: this.#size, sha256: this.#hash.digest('hex') }
  }
}
