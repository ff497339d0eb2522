// Slow and idle clients are cut off, so that none can hold connections open: a request's headers must arrive
// within HEADERS_TIMEOUT_SECONDS; while a request is received or answered, no more than IDLE_TIMEOUT_SECONDS
// may pass without a byte either way; a keep-alive connection idle between requests is closed after
// KEEP_ALIVE_TIMEOUT_SECONDS. Bodies are small everywhere but at the blob endpoint (forms, JSON, OAuth: at most
// 1 MiB): such a request must arrive whole within BODY_TIMEOUT_SECONDS, so that a byte every few seconds
// cannot hold it for ever. The blob endpoint's bodies are uploads, which may take hours on a slow link: they
// must bring UPLOAD_MIN_BYTES_PER_SECOND on average over every IDLE_TIMEOUT_SECONDS instead (a minimum rate,
// not a total). And one client address holds at most MAX_CONNECTIONS_PER_ADDRESS connections at once. Where
// an answer can still be sent (the request's body stalled before any answer), it is a 408 in the error
// envelope; otherwise the connection is closed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Config } from '../config.ts'
import { ERROR_CODES } from '../errors.ts'
import { BLOB_API_PATH } from '../public-urls.ts'
import { errorBody } from './errors.ts'
import { addressBucket } from './rate-limit.ts'

/** How often Node checks the headers timeout: well under the shortest one allowed (1 s). */
const CHECK_INTERVAL_MS = 250

/** Fastify's `serverFactory`: Node's HTTP server with the timeouts of the configuration. */
export function serverWithTimeouts(timeouts: Config['timeouts']) {
  return (handler: (request: IncomingMessage, response: ServerResponse) => void): Server => {
    const server = createServer(
      {
        headersTimeout: timeouts.headersMs,
        // No cap on a whole request here: an upload may take hours on a slow link. `bounded` sets each one's.
        requestTimeout: 0,
        keepAliveTimeout: timeouts.keepAliveMs,
        connectionsCheckingInterval: CHECK_INTERVAL_MS,
      },
      (request, response) => {
        bounded(request, timeouts)
        handler(request, response)
      },
    )
    server.setTimeout(timeouts.idleMs, (socket: Socket) => cutOff(socket))
    if (timeouts.connectionsPerAddress > 0) capConnections(server, timeouts.connectionsPerAddress)
    return server
  }
}

/** Whether the request carries a body still to be read. */
const hasBody = (request: IncomingMessage) =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0

/**
 * A request with a body must have it all by `bodyMs`, or at the blob endpoint bring `uploadMinBytesPerSecond`
 * in every `idleMs`; else the client is cut off.
 */
function bounded(request: IncomingMessage, timeouts: Config['timeouts']): void {
  if (!hasBody(request)) return
  const { socket } = request
  let timer: NodeJS.Timeout
  if (request.url?.startsWith(`${BLOB_API_PATH}/`)) {
    if (timeouts.uploadMinBytesPerSecond === 0) return
    const least = (timeouts.uploadMinBytesPerSecond * timeouts.idleMs) / 1000
    let read = socket.bytesRead
    timer = setInterval(() => {
      if (socket.bytesRead - read < least) cutOff(socket)
      read = socket.bytesRead
    }, timeouts.idleMs)
  } else {
    timer = setTimeout(() => cutOff(socket), timeouts.bodyMs)
  }
  timer.unref()
  // Watched until the body is in, even when the answer went first (a 429 or 401 before the body is read):
  // Node then reads the rest of the body to keep the connection, and a body that trickles would hold it.
  const done = () => clearTimeout(timer)
  request.once('end', done)
  request.once('close', done)
}

/** At most `max` connections at once from one client address; the next ones are closed at once. */
function capConnections(server: Server, max: number): void {
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = addressBucket(socket.remoteAddress ?? '')
    const count = (open.get(address) ?? 0) + 1
    if (count > max) {
      socket.destroy()
      return
    }
    open.set(address, count)
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
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
    // Ended, not destroyed: closed with the client's bytes still coming, the socket would answer them with a
    // reset, which can reach the client before it has read the 408 and discard it (seen in CI: ECONNRESET
    // instead of the answer). Ending sends the answer and then the end of the stream.
    response.end(response.req.method === 'HEAD' ? undefined : STALLED, () => socket.end())
    // A client that does not read the answer, or does not close its side, is not waited for.
    setTimeout(() => socket.destroy(), 1000).unref()
    return
  }
  socket.destroy()
}
