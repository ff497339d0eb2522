// Where file bytes live. Drivers (local disk, S3-compatible) implement this one contract and all pass the
// shared suite in test/blob-store.suite.ts. Keys are relative paths such as `files/ab/fil_x`; a driver
// refuses keys that could escape its root.
import type { Readable } from 'node:stream'

export interface BlobStat {
  size: number
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number
  /** Last byte, inclusive. */
  end: number
}

export interface BlobStore {
  /**
   * Streams `data` into `key`. The blob appears whole or not at all: readers never see a partial blob, and
   * a failed or aborted write leaves nothing behind. An existing blob under `key` is replaced.
   */
  put(key: string, data: AsyncIterable<Uint8Array> | Readable): Promise<BlobStat>
  /** Streams the blob, or the inclusive byte range of it. Throws BlobNotFoundError. */
  get(key: string, range?: ByteRange): Promise<Readable>
  /** The blob's size, or undefined if there is none. */
  stat(key: string): Promise<BlobStat | undefined>
  /** Removes the blob; removing an absent blob is not an error. */
  delete(key: string): Promise<void>
}

export class BlobNotFoundError extends Error {
  constructor(key: string) {
    super(`blob not found: ${key}`)
    this.name = 'BlobNotFoundError'
  }
}

export class InvalidBlobKeyError extends Error {
  constructor(key: string) {
    super(`invalid blob key: ${JSON.stringify(key)}`)
    this.name = 'InvalidBlobKeyError'
  }
}

const KEY = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/

/** Throws unless `key` is a plain relative path: no `..`, no leading `/` or `.`, no empty segments. */
export function assertValidKey(key: string): void {
  if (key.length === 0 || key.length > 1024 || !KEY.test(key)) throw new InvalidBlobKeyError(key)
}
