// Which failures are a dependency's that may pass, rather than a verdict on what was asked: one rule for the HTTP
// layer (a 503 that names what is down) and the background jobs (which try again later, and never take such a
// failure for a fact about a file). Apart from the error catalogue, which clients (the coffer command, MCP) load
// too, so that they load nothing of storage.
import { BlobStoreUnavailableError } from './blob/blob-store.ts'
import { isTransientDatabaseError } from './db/errors.ts'

/**
 * What a failure says is down, if it is a dependency's fault that may pass: the blob store
 * (BlobStoreUnavailableError: down, unreachable, too slow, failing) or the database (isTransientDatabaseError:
 * a lost connection, starting or shutting down, a transaction that lost a race).
 */
export function unavailableDependency(error: unknown): 'the database' | 'file storage' | undefined {
  if (error instanceof BlobStoreUnavailableError) return 'file storage'
  if (isTransientDatabaseError(error)) return 'the database'
  return undefined
}
