// Where a file's bytes and its preview are kept in the BlobStore, and the readiness probes' writes: every key
// Coffer writes is made here (the storage check reports anything else in the store). The keys are made from ids
// the server chose, never from names a client sent, so no key can escape its account's prefix.
import { randomBytes } from 'node:crypto'

export function blobKeyOf(accountId: string, fileId: string): string {
  return `files/${accountId}/${fileId}`
}

/** The file id a file's key was made from: the inverse of `blobKeyOf`. */
export function fileIdOfBlobKey(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1)
}

export function previewKeyOf(accountId: string, fileId: string): string {
  return `previews/${accountId}/${fileId}`
}

/**
 * Where the readiness probes (meta/health.service.ts) write, each under a key of its own. A probe whose removal
 * failed (the store went down between its write and its delete) is left there: the storage check removes it.
 */
export const PROBE_PREFIX = 'health/'

export function probeKey(): string {
  return `${PROBE_PREFIX}probe-${randomBytes(8).toString('hex')}`
}
