// What one process tells Prometheus (prom-client), for the operators of a fleet: requests by route and status
// with their latency, the bytes each route received and sent, blob endpoint requests under way, every blob
// store operation with its outcome and latency, the database pool's use, background job runs, and Node's own
// figures (CPU, memory, event loop lag, GC). Each process has its own registry; Prometheus scrapes every
// process and sums. Never public by default: off unless METRICS_PORT (a listener of its own) or METRICS_TOKEN
// (GET /metrics on the main port, with that bearer token) is set.
import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { BlobNotFoundError, type BlobStore } from '../blob/blob-store.ts'
import type { MetricsConfig } from '../config.ts'
import type { Exclusively, PoolUse } from '../db/database.ts'
import { AppError } from '../errors.ts'

/** Seconds: from a cached lookup (well under 5 ms) to a large upload's last part (a minute and more). */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

/** The label of a request that matched no route: one series for every unknown path, whatever it was. */
const UNMATCHED = 'unmatched'

export class Metrics {
  readonly registry = new Registry()
  readonly #requests = new Histogram({
    name: 'coffer_http_request_duration_seconds',
    help: 'Requests by method, route (the pattern, not the path) and status ("aborted": the client left before the answer ended), with the time from their first byte to their answer’s last.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  })
  readonly #received = new Counter({
    name: 'coffer_http_received_bytes_total',
    help: 'Bytes received by route, headers included: the blob endpoint’s (/blob/…) are the bytes of uploads.',
    labelNames: ['route'] as const,
    registers: [this.registry],
  })
  readonly #sent = new Counter({
    name: 'coffer_http_sent_bytes_total',
    help: 'Bytes sent by route, headers included: the download routes’ are the bytes of downloads (those handed to nginx or the object store are not here).',
    labelNames: ['route'] as const,
    registers: [this.registry],
  })
  readonly #uploadsInFlight = new Gauge({
    name: 'coffer_uploads_in_flight',
    help: 'Requests to the blob endpoint (the bytes of uploads, their parts and completions) under way in this process.',
    registers: [this.registry],
  })
  readonly #blobOperations = new Histogram({
    name: 'coffer_blob_operation_duration_seconds',
    help: 'Blob store operations by outcome (ok, not_found, error), with their time: to the first byte for a get, to the end for the rest.',
    labelNames: ['operation', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  })
  readonly #jobRuns = new Counter({
    name: 'coffer_job_runs_total',
    help: 'Runs of each background job by outcome: ran, skipped (another process was running it), failed.',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  })
  readonly #jobDuration = new Histogram({
    name: 'coffer_job_duration_seconds',
    help: 'How long each background job ran, when it ran here.',
    labelNames: ['job'] as const,
    buckets: [0.01, 0.1, 1, 10, 60, 600, 3600],
    registers: [this.registry],
  })
  /** Bytes of each connection already counted, so that each request of a kept-alive one counts its own. */
  readonly #counted = new WeakMap<Socket, { read: number; written: number }>()

  constructor(deps: { poolUse: () => PoolUse | undefined }) {
    const { poolUse } = deps
    new Gauge({
      name: 'coffer_db_pool_connections',
      help: 'PostgreSQL connections of this process’s query pool: open (all of them) and idle.',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const use = poolUse()
        if (!use) return
        this.set({ state: 'open' }, use.open)
        this.set({ state: 'idle' }, use.idle)
      },
    })
    new Gauge({
      name: 'coffer_db_pool_waiting_queries',
      help: 'Queries of this process waiting for a PostgreSQL connection of its pool.',
      registers: [this.registry],
      collect() {
        const use = poolUse()
        if (use) this.set(use.waiting)
      },
    })
    collectDefaultMetrics({ register: this.registry })
  }

  /** Times every request, and counts its bytes, from its first hook to the end of its answer. */
  measureRequests(app: FastifyInstance, isUpload: (route: string) => boolean): void {
    app.addHook('onRequest', (request, reply, done) => {
      const started = performance.now()
      const route = request.routeOptions.url ?? UNMATCHED
      const upload = isUpload(route)
      if (upload) this.#uploadsInFlight.inc()
      // 'close' comes once, whether the answer ended or the client went away (Fastify's onResponse would
      // miss the latter); 'finish' before it, when the whole answer was handed over.
      let finished = false
      reply.raw.once('finish', () => {
        finished = true
      })
      reply.raw.once('close', () => {
        if (upload) this.#uploadsInFlight.dec()
        const status = finished ? String(reply.raw.statusCode) : 'aborted'
        this.#requests.observe(
          { method: request.method, route, status },
          (performance.now() - started) / 1000,
        )
        this.#countBytes(request.raw.socket, route)
      })
      done()
    })
  }

  /** What the connection moved since it was last counted; injected requests have no real socket. */
  #countBytes(socket: Socket | null, route: string): void {
    if (typeof socket?.bytesRead !== 'number') return
    const before = this.#counted.get(socket) ?? { read: 0, written: 0 }
    const now = { read: socket.bytesRead, written: socket.bytesWritten }
    this.#received.inc({ route }, now.read - before.read)
    this.#sent.inc({ route }, now.written - before.written)
    this.#counted.set(socket, now)
  }

  /** `exclusively` whose runs are counted and timed. */
  measureJobs(exclusively: Exclusively): Exclusively {
    return async (job, run) => {
      let stopTimer: (() => void) | undefined
      try {
        const ran = await exclusively(job, async () => {
          stopTimer = this.#jobDuration.startTimer({ job })
          await run()
        })
        this.#jobRuns.inc({ job, outcome: ran ? 'ran' : 'skipped' })
        return ran
      } catch (error) {
        this.#jobRuns.inc({ job, outcome: 'failed' })
        throw error
      } finally {
        stopTimer?.()
      }
    }
  }

  /** `blobs`, with each operation timed by outcome. */
  measureBlobStore(blobs: BlobStore): BlobStore {
    const timed = async <T>(operation: string, call: () => Promise<T>): Promise<T> => {
      const stopTimer = this.#blobOperations.startTimer({ operation })
      try {
        const result = await call()
        stopTimer({ outcome: 'ok' })
        return result
      } catch (error) {
        stopTimer({ outcome: error instanceof BlobNotFoundError ? 'not_found' : 'error' })
        throw error
      }
    }
    const timedListing = <T>(operation: string, listing: () => AsyncIterable<T>): AsyncIterable<T> => {
      const blobOperations = this.#blobOperations
      return (async function* () {
        const stopTimer = blobOperations.startTimer({ operation })
        try {
          yield* listing()
          stopTimer({ outcome: 'ok' })
        } catch (error) {
          stopTimer({ outcome: 'error' })
          throw error
        }
      })()
    }
    return {
      put: (key, data, length) => timed('put', () => blobs.put(key, data, length)),
      get: (key, range) => timed('get', () => blobs.get(key, range)),
      stat: (key) => timed('stat', () => blobs.stat(key)),
      delete: (key) => timed('delete', () => blobs.delete(key)),
      list: (prefix) => timedListing('list', () => blobs.list(prefix)),
      inventory: () => timedListing('inventory', () => blobs.inventory()),
      leftovers: () => timedListing('leftovers', () => blobs.leftovers()),
      removeLeftover: (id) => timed('remove_leftover', () => blobs.removeLeftover(id)),
      createMultipart: (key) => timed('create_multipart', () => blobs.createMultipart(key)),
      writePart: (upload, partNumber, data, length) =>
        timed('write_part', () => blobs.writePart(upload, partNumber, data, length)),
      listParts: (upload) => timed('list_parts', () => blobs.listParts(upload)),
      completeMultipart: (upload, parts) =>
        timed('complete_multipart', () => blobs.completeMultipart(upload, parts)),
      abortMultipart: (upload) => timed('abort_multipart', () => blobs.abortMultipart(upload)),
    }
  }

  /**
   * Serves the metrics as `config` says: GET /metrics on the app's port for the bearer of METRICS_TOKEN, and
   * on METRICS_HOST:METRICS_PORT for anyone who can reach it.
   */
  serve(app: FastifyInstance, config: MetricsConfig): void {
    const { registry } = this
    if (config.tokenHash) {
      const tokenHash = config.tokenHash
      app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
        if (!bearerMatches(request.headers.authorization, tokenHash)) {
          reply.header('www-authenticate', 'Bearer realm="metrics"')
          throw new AppError('unauthorized', 'GET /metrics needs the METRICS_TOKEN as a bearer token.')
        }
        return reply
          .header('cache-control', 'no-store')
          .type(registry.contentType)
          .send(await registry.metrics())
      })
    }
    if (config.port !== undefined) {
      const { host, port } = config
      let server: Server | undefined
      app.addHook('onReady', async () => {
        server = await listen(registry, host, port)
        app.log.info({ host, port }, 'metrics served at /metrics on a port of their own')
      })
      app.addHook('onClose', async () => {
        await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
      })
    }
  }
}

/** Whether `Authorization` carries the token hashed in `tokenHash`, compared in constant time. */
function bearerMatches(authorization: string | undefined, tokenHash: Buffer): boolean {
  const token = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1]
  if (token === undefined) return false
  return timingSafeEqual(createHash('sha256').update(token).digest(), tokenHash)
}

/** The metrics listener: GET /metrics, and nothing else. */
async function listen(registry: Registry, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    const path = request.url?.split('?')[0]
    if (request.method !== 'GET' || path !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Only GET /metrics here.\n')
      return
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return server
}
