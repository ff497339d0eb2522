// Sends the deliveries the outbox holds (events.repository.ts), in every process that serves: each leases the
// due ones row by row (on PostgreSQL skipping those another process is leasing), so processes share the work and
// no attempt is made twice. An attempt is a POST of the event's body, signed by the Standard Webhooks scheme
// with the maintained `standardwebhooks` library (`webhook-id` is the event's id, the same for every attempt and
// endpoint); a 2xx within ATTEMPT_TIMEOUT_MS is success, and redirects are not followed. A failure is tried again
// on RETRY_DELAYS_MS, then daily, until GIVE_UP_AFTER_MS after the event; an endpoint that has failed every
// delivery for that long is disabled.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import ipaddr from 'ipaddr.js'
import { Webhook } from 'standardwebhooks'
import { type AuditLog, SYSTEM } from '../../platform/audit/audit-log.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { faultPoint } from '../../platform/fault-points.ts'
import { LeasedWorker } from '../../platform/jobs/leased-worker.ts'
import type { DeliveryOutcome, EventsRepository, LeasedDelivery } from './events.repository.ts'
import type { WebhookSecrets } from './webhook-secrets.ts'
import { checkedLookup, refusalOf, TargetRefused } from './webhook-targets.ts'
import type { WebhookEndpoint, WebhooksRepository } from './webhooks.repository.ts'
import { webhookAuditDetails } from './webhooks.service.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** The waits before the second, third, … attempt; then a day between attempts. */
export const RETRY_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR]
/** No attempt later than this after the event; an endpoint failing for this long is disabled. */
export const GIVE_UP_AFTER_MS = 3 * DAY
export const ATTEMPT_TIMEOUT_MS = 10 * SECOND
/** How much of an answer's body is read and kept. */
export const RESPONSE_LIMIT_BYTES = 1024
/** Attempts under way per process (POSTs and their records), and POSTs to one endpoint at once. */
const MAX_IN_FLIGHT = 32
const MAX_IN_FLIGHT_PER_ENDPOINT = 4
/** Long enough for an attempt and its record; a process that dies holding one frees it after this. */
const LEASE_MS = ATTEMPT_TIMEOUT_MS + 20 * SECOND
const POLL_INTERVAL_MS = 500

export interface SenderLog {
  error(details: object, message: string): void
  warn(details: object, message: string): void
}

export interface SenderDeps {
  /**
   * Whether this process is the only one that sends (the embedded mode, on SQLite): at start, no lease can then
   * belong to a live process, so it takes back every one at once instead of waiting for them to run out.
   */
  soleSender: boolean
  events: EventsRepository
  webhooks: WebhooksRepository
  secrets: WebhookSecrets
  /** WEBHOOKS_ALLOW_PRIVATE: loopback and private addresses may receive webhooks, over http:// too. */
  allowPrivate: boolean
  /** The clock; tests move it forward to reach the retries of days. */
  now?: () => number
  transaction: Transactor
  /** Records webhook.changed, by the system, when the sender disables an endpoint that keeps failing. */
  audit: AuditLog
  /**
   * Tells the owner of an endpoint being disabled (an email, if any): `prepare` reads what it needs before the
   * transaction (on SQLite the transaction holds the one connection), and its result writes in it.
   */
  onDisabled?: (
    endpoint: WebhookEndpoint,
    reason: string,
  ) => Promise<((trx: Transaction) => Promise<void>) | undefined>
}

/**
 * When the attempt after `attempts` failed ones is due, or undefined when none is left: the last falls at
 * GIVE_UP_AFTER_MS after the event, so that an endpoint that never answers has failed that long by then.
 */
export function nextAttemptAt(attempts: number, eventAt: number, failedAt: number): number | undefined {
  const deadline = eventAt + GIVE_UP_AFTER_MS
  if (failedAt >= deadline) return undefined
  return Math.min(failedAt + (RETRY_DELAYS_MS[attempts - 1] ?? DAY), deadline)
}

export class WebhookSender {
  readonly #events: EventsRepository
  readonly #webhooks: WebhooksRepository
  readonly #secrets: WebhookSecrets
  readonly #allowPrivate: boolean
  readonly #now: () => number
  readonly #transaction: Transactor
  readonly #onDisabled: SenderDeps['onDisabled']
  readonly #audit: AuditLog
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #perEndpoint = new Map<string, number>()
  /**
   * Leased deliveries of endpoints that have enough under way, each started when one of its endpoint's ends: at
   * most MAX_IN_FLIGHT_PER_ENDPOINT an endpoint, so none waits longer than one attempt, well within its lease.
   */
  readonly #waiting = new Map<string, LeasedDelivery[]>()
  readonly #schedule: LeasedWorker
  #stopped = true
  #log: SenderLog | undefined

  constructor(deps: SenderDeps) {
    this.#events = deps.events
    this.#webhooks = deps.webhooks
    this.#secrets = deps.secrets
    this.#allowPrivate = deps.allowPrivate
    this.#now = deps.now ?? Date.now
    this.#transaction = deps.transaction
    this.#onDisabled = deps.onDisabled
    this.#audit = deps.audit
    this.#schedule = new LeasedWorker(() => this.#pollOnce(), {
      intervalMs: POLL_INTERVAL_MS,
      soleProcess: deps.soleSender,
      releaseLeases: () => this.#events.releaseLeases(),
      what: 'webhook deliveries',
    })
  }

  /** Takes back what a dead process left (embedded mode), then leases what is due every POLL_INTERVAL_MS. */
  start(log: SenderLog): void {
    this.#log = log
    this.#stopped = false
    this.#schedule.start(log)
  }

  /** Stops leasing, gives back what waits, and waits for the attempts under way. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.#schedule.stop()
    const waiting = [...this.#waiting.values()].flat()
    this.#waiting.clear()
    if (waiting.length > 0) {
      await this.#events
        .release(waiting.map((delivery) => delivery.id))
        .catch((error: unknown) => this.#log?.error({ err: error }, 'could not give back webhook deliveries'))
    }
    await Promise.allSettled(this.#inFlight.values())
  }

  /** Leases and starts what is due now, as far as there is room; passes never overlap. */
  poll(): Promise<void> {
    return this.#schedule.pass()
  }

  /** Resolves once every attempt started so far has ended (the tests of the retry schedule). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#inFlight.values())
  }

  async #pollOnce(): Promise<void> {
    try {
      while (!this.#stopped) {
        const waiting = [...this.#waiting.values()].reduce((sum, list) => sum + list.length, 0)
        const room = MAX_IN_FLIGHT - this.#inFlight.size - waiting
        if (room <= 0) return
        // Endpoints with as many under way and waiting as they may have are left out, so that one with a
        // backlog holds up no other.
        const full = [...this.#perEndpoint.keys()].filter(
          (endpointId) => (this.#waiting.get(endpointId)?.length ?? 0) >= MAX_IN_FLIGHT_PER_ENDPOINT,
        )
        const leased = await this.#events.lease(this.#now(), LEASE_MS, room, full)
        if (leased.length > 0) faultPoint('webhook-leased')
        // Those beyond what an endpoint may have go back at once, for a later turn or another process.
        const surplus = leased.filter((delivery) => !this.#take(delivery))
        if (surplus.length > 0) await this.#events.release(surplus.map((delivery) => delivery.id))
        if (leased.length < room) return
      }
    } catch (error) {
      this.#log?.error({ err: error }, 'could not lease webhook deliveries')
    }
  }

  /**
   * Starts the delivery's attempt, or keeps it waiting while its endpoint has enough under way; false when the
   * endpoint has as many waiting as it may.
   */
  #take(delivery: LeasedDelivery): boolean {
    if ((this.#perEndpoint.get(delivery.endpointId) ?? 0) < MAX_IN_FLIGHT_PER_ENDPOINT) {
      this.#begin(delivery)
      return true
    }
    const waiting = this.#waiting.get(delivery.endpointId) ?? []
    if (waiting.length >= MAX_IN_FLIGHT_PER_ENDPOINT) return false
    waiting.push(delivery)
    this.#waiting.set(delivery.endpointId, waiting)
    return true
  }

  /**
   * Starts the delivery's attempt. Its endpoint's share counts the POST only, not the record after it: the bound
   * is on what the receiver is asked at once, and a commit's wait (an fsync) must not hold up its next POST.
   */
  #begin(delivery: LeasedDelivery): void {
    const { endpointId } = delivery
    this.#perEndpoint.set(endpointId, (this.#perEndpoint.get(endpointId) ?? 0) + 1)
    let answered = false
    const onAnswer = () => {
      if (answered) return
      answered = true
      const left = (this.#perEndpoint.get(endpointId) ?? 1) - 1
      if (left === 0) this.#perEndpoint.delete(endpointId)
      else this.#perEndpoint.set(endpointId, left)
      if (this.#stopped) return
      // The endpoint's next, if one waits. Otherwise room was made, and what is due may go before the next
      // tick; not after every attempt of a backlog, whose leases would each read past the whole backlog.
      const next = this.#waiting.get(endpointId)?.shift()
      if (this.#waiting.get(endpointId)?.length === 0) this.#waiting.delete(endpointId)
      if (next) this.#begin(next)
      else void this.poll()
    }
    const work = this.#attempt(delivery, onAnswer)
      .catch((error: unknown) =>
        this.#log?.error({ err: error, deliveryId: delivery.id }, 'webhook attempt failed'),
      )
      .finally(() => {
        this.#inFlight.delete(delivery.id)
        onAnswer()
      })
    this.#inFlight.set(delivery.id, work)
  }

  /** One attempt: the POST (`onAnswer` once it has ended), then its record and what it means for the endpoint. */
  async #attempt(delivery: LeasedDelivery, onAnswer: () => void): Promise<void> {
    const endpoint = await this.#webhooks.byId(delivery.endpointId)
    if (!endpoint?.isActive) {
      await this.#events.abandon(delivery.id, this.#now())
      return
    }
    const at = this.#now()
    const started = performance.now()
    const answer = await this.#post(endpoint, delivery, at)
    const latencyMs = Math.round(performance.now() - started)
    onAnswer()
    const attempt = delivery.attempts + 1
    const succeeded = answer.status !== null && answer.status >= 200 && answer.status < 300
    let outcome: DeliveryOutcome
    if (succeeded) {
      outcome = { state: 'succeeded' }
    } else {
      const next = nextAttemptAt(attempt, delivery.createdAt, at)
      outcome = next === undefined ? { state: 'failed' } : { state: 'pending', nextAttemptAt: next }
    }
    await this.#events.recordAttempt(delivery.id, attempt, { at, latencyMs, ...answer }, outcome)
    if (succeeded) await this.#webhooks.markAnswering(endpoint.id)
    else await this.#failed(endpoint, at, outcome.state === 'failed' ? delivery.id : undefined)
  }

  /**
   * An attempt failed at `at`; `exhausted`, the delivery that has no attempt left, if so. The endpoint is
   * disabled once every delivery to it has failed for GIVE_UP_AFTER_MS, or when one runs out of attempts (its
   * last falls at GIVE_UP_AFTER_MS after its event) without the endpoint answering anything since its first.
   */
  async #failed(endpoint: WebhookEndpoint, at: number, exhausted: string | undefined): Promise<void> {
    const failingSince = await this.#webhooks.markFailing(endpoint.id, at)
    if (failingSince === undefined) return
    const tooLong =
      at - failingSince >= GIVE_UP_AFTER_MS ||
      (exhausted !== undefined && failingSince <= ((await this.#events.firstAttemptAt(exhausted)) ?? at))
    if (!tooLong) return
    const reason = `Every delivery failed from ${new Date(failingSince).toISOString()} to ${new Date(at).toISOString()}.`
    const tell = await this.#onDisabled?.(endpoint, reason)
    const disabled = await this.#transaction(async (trx) => {
      if (!(await this.#webhooks.disableFailing(endpoint.id, reason, trx))) return false
      await tell?.(trx)
      await this.#audit.record(trx, {
        accountId: endpoint.accountId,
        kind: 'webhook.changed',
        subjectId: endpoint.id,
        details: {
          changed: ['isActive'],
          reason: 'failing',
          failingSince: new Date(failingSince).toISOString(),
          ...webhookAuditDetails({ ...endpoint, isActive: false }),
        },
        actor: SYSTEM,
      })
      return true
    })
    if (disabled) {
      this.#log?.warn({ endpointId: endpoint.id, accountId: endpoint.accountId }, 'webhook endpoint disabled')
    }
  }

  /** The POST of one attempt: the status and the start of the body, or why no answer came. */
  async #post(
    endpoint: WebhookEndpoint,
    delivery: LeasedDelivery,
    at: number,
  ): Promise<{ status: number | null; error: string | null; response: string | null }> {
    const url = new URL(endpoint.url)
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    // A literal address is not looked up, so the lookup's check would not see it.
    const refusal = ipaddr.isValid(host) ? refusalOf(host, this.#allowPrivate) : undefined
    if (refusal) return { status: null, error: `Not sent: ${refusal}.`, response: null }
    const body = Buffer.from(delivery.payload)
    const headers = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': 'Coffer-Webhooks/1',
      'webhook-id': delivery.eventId,
      'webhook-timestamp': String(Math.floor(at / 1000)),
      'webhook-signature': await this.#signatures(endpoint, delivery, at),
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise((done) => {
      const req = send(url, {
        method: 'POST',
        headers,
        lookup: checkedLookup(this.#allowPrivate),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        agent: false,
      })
      const fail = (error: Error) => {
        const message =
          error instanceof TargetRefused
            ? `Not sent: ${error.message}`
            : error.name === 'TimeoutError' || error.name === 'AbortError'
              ? `No answer within ${ATTEMPT_TIMEOUT_MS / 1000} s.`
              : `${(error as NodeJS.ErrnoException).code ?? error.name}: ${error.message}`
        done({ status: null, error: message, response: null })
      }
      req.once('error', fail)
      req.once('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = []
        let size = 0
        let finished = false
        const finish = () => {
          if (finished) return
          finished = true
          req.destroy()
          const text = Buffer.concat(chunks).subarray(0, RESPONSE_LIMIT_BYTES).toString('utf8')
          done({ status: res.statusCode ?? null, error: null, response: text === '' ? null : text })
        }
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          size += chunk.length
          if (size >= RESPONSE_LIMIT_BYTES) finish()
        })
        res.once('end', finish)
        res.once('error', finish)
      })
      req.end(body)
    })
  }

  /** The signatures of the attempt: by the endpoint's secret, and by the one before while a rotation lasts. */
  async #signatures(endpoint: WebhookEndpoint, delivery: LeasedDelivery, at: number): Promise<string> {
    const generations = [endpoint.secretGeneration]
    if (endpoint.previousSecretUntil !== null && endpoint.previousSecretUntil > at) {
      generations.push(endpoint.secretGeneration - 1)
    }
    const signatures = await Promise.all(
      generations.map(async (generation) =>
        new Webhook(await this.#secrets.secretOf(endpoint.id, generation)).sign(
          delivery.eventId,
          new Date(at),
          delivery.payload,
        ),
      ),
    )
    return signatures.join(' ')
  }
}
