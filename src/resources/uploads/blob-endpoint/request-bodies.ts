// The body of a blob request: read as a stream of chunks by the store, and, when the request is refused part-way
// (a store that is down, a part too large), what is left of it read and thrown away before the answer.
import type { IncomingMessage } from 'node:http'
import { finished } from 'node:stream/promises'
import type { Body } from './blob-endpoint.service.ts'

/**
 * The request body as a stream of chunks. Leaving the iteration early (a refusal mid-body) must not destroy
 * the request, or the socket would die before the error response could tell the client why.
 */
export const bodyOf = (request: IncomingMessage): Body => request.iterator({ destroyOnReturn: false })

/** The largest refused body read to its end and thrown away, and how long that may take. */
export const DRAINED_BODY_LIMIT_BYTES = 16 * 1024 * 1024
const DRAIN_TIMEOUT_MS = 10_000

/**
 * Reads what is left of a refused body and throws it away, when its announced length is small enough (a part
 * or a single PUT is): a proxy in front sends the whole body before it reads the answer, so a connection
 * closed under it turns the refusal, a 503 to retry or a 403 to act on, into the proxy's 502. False when the
 * body is left unread: too large, of unknown length, or not arriving.
 */
export async function drainRefusedBody(body: IncomingMessage): Promise<boolean> {
  if (body.readableEnded) return true
  const announced = Number(body.headers['content-length'])
  if (!(Number.isSafeInteger(announced) && announced <= DRAINED_BODY_LIMIT_BYTES)) return false
  // A reader that gave up on the body mid-way (a store's upload that failed while it waited for the next chunk)
  // may have left its 'readable' listener behind, and a stream with one does not flow when resumed: the drain
  // waited out its whole timeout (10 s behind a 503, seen in the fleet's fault test).
  body.removeAllListeners('readable')
  try {
    await finished(body.resume(), { signal: AbortSignal.timeout(DRAIN_TIMEOUT_MS) })
    return true
  } catch {
    return false
  }
}
