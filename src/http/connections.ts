// Slow and idle clients are cut off, so that none can hold connections open: a request's headers must arrive
// within HEADERS_TIMEOUT_SECONDS; while a request is received or answered, no more than IDLE_TIMEOUT_SECONDS
// may pass without a byte either way (a minimum rate rather than a total, so a large upload on a slow link
// still succeeds, as long as it moves); a keep-alive connection idle between requests is closed after
// KEEP_ALIVE_TIMEOUT_SECONDS. Where an answer can still be sent (the request's body stalled before any
// answer), it is a 408 in the error envelope; otherwise the connection is closed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Config } from '../config.ts'
import { ERROR_CODES } from '../errors.ts'
import { errorBody } from './errors.ts'

/** How often Node checks the headers timeout: well under the shortest one allowed (1 s). */
const CHECK_INTERVAL_MS = 250

/** Fastify's `serverFactory`: Node's HTTP server with the timeouts of the configuration. */
export function serverWithTimeouts(timeouts: Config['timeouts']) {
  return (handler: (request: IncomingMessage, response: ServerResponse) => void): Server => {
    const server = createServer(
      {
        headersTimeout: timeouts.headersMs,
        // No cap on a whole request: an upload may take hours on a slow link. The idle timeout bounds it.
        requestTimeout: 0,
        keepAliveTimeout: timeouts.keepAliveMs,
        connectionsCheckingInterval: CHECK_INTERVAL_MS,
      },
      handler,
    )
    server.setTimeout(timeouts.idleMs, (socket: Socket) => cutOff(socket))
    return server
  }
}

const STALLED = JSON.stringify(
  errorBody('request_timeout', 'The request body stopped arriving: no byte was received in time.'),
)

/** An idle connection: a 408 for a request whose body stalled before any answer began; closed either way. */
function cutOff(socket: Socket): void {
  const response = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage
  if (response && !response.headersSent && !response.writableEnded) {
    const status = ERROR_CODES.request_timeout.status
    response.shouldKeepAlive = false
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(STALLED),
      connection: 'close',
    })
    response.end(response.req.method === 'HEAD' ? undefined : STALLED, () => socket.destroy())
    // A client that does not read the answer either is not waited for.
    setTimeout(() => socket.destroy(), 1000).unref()
    return
  }
  socket.destroy()
}
