// Streams bytes through while counting them, and refuses to pass more than a limit; with `digest`, also computes
// their digests (blob/content-digest.ts): the blob endpoint learns the size, SHA-256 and CRC-32 of a blob in the
// same pass that stores it.
import { Digester } from '../../../platform/blob/content-digest.ts'
import { tooLarge } from './errors.ts'

export interface Digest {
  size: number
  /** Null, both, for a multipart upload joined by a store that does not hash it (S3): computed later. */
  sha256: string | null
  crc32: number | null
}

export class ByteMeter {
  readonly #limit: number
  readonly #digester: Digester | undefined
  #size = 0

  constructor(limit: number, options: { digest: boolean }) {
    this.#limit = limit
    this.#digester = options.digest ? new Digester() : undefined
  }

  get size(): number {
    return this.#size
  }

  /** Passes every chunk of `source` on, failing with `file_too_large` once more than the limit went by. */
  async *measure(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      this.#size += chunk.byteLength
      if (this.#size > this.#limit) throw tooLarge(this.#limit)
      this.#digester?.update(chunk)
      yield chunk
    }
  }

  digest(): Digest {
    if (!this.#digester) throw new Error('ByteMeter was created without digests')
    return { size: this.#size, ...this.#digester.digest() }
  }
}
