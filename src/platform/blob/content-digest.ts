// The digests of a blob's bytes, computed in the pass that stores them: the SHA-256 (the File's `sha256`, the
// strong ETag of downloads) and the CRC-32 that a zip of the file states in its entry's header
// (files/zip/zip-stream.ts), so that its bytes can be piped from the store untouched. zlib's CRC-32 runs at several
// GB/s: the one pass costs little more than the hash alone, where a second read of the blob would double it.
import { createHash, type Hash } from 'node:crypto'
import { crc32 } from 'node:zlib'

export interface ContentDigest {
  /** Lowercase hex. */
  sha256: string
  /** Unsigned. */
  crc32: number
}

export class Digester {
  readonly #hash: Hash
  #crc: number

  constructor(hash: Hash = createHash('sha256'), crc = 0) {
    this.#hash = hash
    this.#crc = crc
  }

  update(chunk: Uint8Array): void {
    this.#hash.update(chunk)
    this.#crc = crc32(chunk, this.#crc)
  }

  /** A digester that goes on from here, this one left as it is. */
  copy(): Digester {
    return new Digester(this.#hash.copy(), this.#crc)
  }

  /** The digests of every chunk given; the digester is spent. */
  digest(): ContentDigest {
    return { sha256: this.#hash.digest('hex'), crc32: this.#crc }
  }
}
