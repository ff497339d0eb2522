// The outbox and what it takes to empty it: events, their deliveries to endpoints, and each delivery's
// attempts. Events and deliveries are written in the caller's transaction (events.ts); the senders lease due
// deliveries row by row (webhook-sender.job.ts).
import { type Kysely, sql } from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import type { Engine } from '../../platform/db/engine.ts'
import { decodeCursor, fetchSizeFor, keysetAfter, type Page, toPage } from '../../platform/db/pagination.ts'
import type { Database } from '../../platform/db/schema.ts'
import { WriteBatch } from '../../platform/db/write-batch.ts'
import { newId } from '../../platform/ids.ts'

/** How long events and their deliveries are kept once no attempt is due: the deliveries an owner can look at. */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000

export interface NewEvent {
  id: string
  accountId: string
  type: string
  /** The JSON body, as sent. */
  payload: string
  createdAt: number
}

/** A delivery a sender holds, with what it sends. */
export interface LeasedDelivery {
  id: string
  endpointId: string
  eventId: string
  payload: string
  /** Attempts made before this one. */
  attempts: number
  createdAt: number
}

export interface AttemptRecord {
  at: number
  status: number | null
  latencyMs: number
  error: string | null
  response: string | null
}

/** What comes of an attempt: succeeded, failed for good, or pending again at `nextAttemptAt`. */
export type DeliveryOutcome = { state: 'succeeded' | 'failed' } | { state: 'pending'; nextAttemptAt: number }

type DeliveryState = 'pending' | 'succeeded' | 'failed'

interface AttemptToRecord {
  deliveryId: string
  attempt: number
  record: AttemptRecord
  outcome: DeliveryOutcome
}

export interface Delivery {
  id: string
  eventId: string
  eventType: string
  state: 'pending' | 'succeeded' | 'failed'
  attempts: (AttemptRecord & { attempt: number })[]
  nextAttemptAt: number | null
  createdAt: number
  updatedAt: number
}

/** Rows per INSERT: well within either engine's limit on bound values (SQLite's 32,766 the lower). */
const ROWS_AT_ONCE = 500

function* chunks<Row>(rows: Row[]): Generator<Row[]> {
  for (let i = 0; i < rows.length; i += ROWS_AT_ONCE) yield rows.slice(i, i + ROWS_AT_ONCE)
}

export class EventsRepository {
  readonly #db: Kysely<Database>
  readonly #engine: Engine
  readonly #attempts: WriteBatch<AttemptToRecord, undefined>

  constructor(db: Db) {
    this.#db = db.kysely
    this.#engine = db.engine
    this.#attempts = new WriteBatch((attempts) => this.#commitAttempts(attempts), { maxItems: 200 })
  }

  /** The account's active endpoints that receive `type`, in the caller's transaction. */
  async subscribers(trx: Transaction, accountId: string, type: string): Promise<string[]> {
    const rows = await trx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('account_id', '=', accountId)
      .where('is_active', '=', true)
      .where('event_types', 'like', `% ${type} %`)
      .execute()
    return rows.map((row) => row.id)
  }

  /**
   * The active endpoints of any of the accounts that receive any of the types, with the types each receives;
   * outside a transaction, for writes that look once for a batch of changes of many accounts.
   */
  async subscribersOfAccounts(
    accountIds: string[],
    types: string[],
  ): Promise<{ id: string; accountId: string; types: string[] }[]> {
    const rows = await this.#db
      .selectFrom('webhook_endpoints')
      .select(['id', 'account_id', 'event_types'])
      .where('account_id', 'in', accountIds)
      .where('is_active', '=', true)
      .where((eb) => eb.or(types.map((type) => eb('event_types', 'like', `% ${type} %`))))
      .execute()
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      types: row.event_types.trim().split(' '),
    }))
  }

  /**
   * Records the events and a delivery of each to each of its endpoints, due at once: the rows of many events in
   * few statements (a batch of share visits may record hundreds).
   */
  async insert(
    executor: Kysely<Database>,
    events: { event: NewEvent; endpointIds: string[] }[],
  ): Promise<void> {
    const eventRows = events.map(({ event }) => ({
      id: event.id,
      account_id: event.accountId,
      type: event.type,
      payload: event.payload,
      created_at: event.createdAt,
    }))
    const deliveryRows = events.flatMap(({ event, endpointIds }) =>
      endpointIds.map((endpointId) => ({
        id: newId('dlv', event.createdAt),
        endpoint_id: endpointId,
        event_id: event.id,
        state: 'pending' as const,
        attempts: 0,
        next_attempt_at: event.createdAt,
        lease_until: null,
        created_at: event.createdAt,
        updated_at: event.createdAt,
      })),
    )
    for (const rows of chunks(eventRows)) await executor.insertInto('events').values(rows).execute()
    for (const rows of chunks(deliveryRows))
      await executor.insertInto('webhook_deliveries').values(rows).execute()
  }

  /** Records `event` for one endpoint outside any other change (a test event). */
  async insertAlone(event: NewEvent, endpointId: string): Promise<void> {
    await this.#db.transaction().execute((trx) => this.insert(trx, [{ event, endpointIds: [endpointId] }]))
  }

  /**
   * Leases up to `limit` deliveries due at `now` that no live sender holds, oldest first, until `now + leaseMs`;
   * none to the endpoints of `skipEndpoints` (those with enough under way). On PostgreSQL the rows another
   * process is leasing at the same moment are skipped, not waited for.
   */
  async lease(
    now: number,
    leaseMs: number,
    limit: number,
    skipEndpoints: string[] = [],
  ): Promise<LeasedDelivery[]> {
    const due = this.#db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .$if(skipEndpoints.length > 0, (query) => query.where('endpoint_id', 'not in', skipEndpoints))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(limit)
    const leased = await this.#db
      .updateTable('webhook_deliveries')
      .set({ lease_until: now + leaseMs })
      .where('id', 'in', this.#engine === 'postgres' ? due.forUpdate().skipLocked() : due)
      .returning('id')
      .execute()
    if (leased.length === 0) return []
    const rows = await this.#db
      .selectFrom('webhook_deliveries')
      .innerJoin('events', 'events.id', 'webhook_deliveries.event_id')
      .select([
        'webhook_deliveries.id',
        'webhook_deliveries.endpoint_id',
        'webhook_deliveries.event_id',
        'webhook_deliveries.attempts',
        'webhook_deliveries.created_at',
        'events.payload',
      ])
      .where(
        'webhook_deliveries.id',
        'in',
        leased.map((row) => row.id),
      )
      .orderBy('webhook_deliveries.next_attempt_at')
      .execute()
    return rows.map((row) => ({
      id: row.id,
      endpointId: row.endpoint_id,
      eventId: row.event_id,
      payload: row.payload,
      attempts: Number(row.attempts),
      createdAt: Number(row.created_at),
    }))
  }

  /** Ends every lease: for a process that knows no other can hold one (the embedded mode, at start). */
  async releaseLeases(): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ lease_until: null })
      .where('state', '=', 'pending')
      .where('lease_until', 'is not', null)
      .execute()
  }

  /** Gives leased deliveries back untried, for another turn. */
  async release(deliveryIds: string[]): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ lease_until: null })
      .where('id', 'in', deliveryIds)
      .execute()
  }

  /**
   * Records attempt number `attempt` of the delivery and what comes of it, together; the lease ends. A retry
   * asked for meanwhile wins over the outcome: the delivery is due again at once. The records of attempts that
   * end together are committed together (db/write-batch.ts): one commit for many deliveries.
   */
  recordAttempt(
    deliveryId: string,
    attempt: number,
    record: AttemptRecord,
    outcome: DeliveryOutcome,
  ): Promise<void> {
    return this.#attempts.add({ deliveryId, attempt, record, outcome })
  }

  async #commitAttempts(attempts: AttemptToRecord[]): Promise<undefined[]> {
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .insertInto('webhook_attempts')
        .values(
          attempts.map(({ deliveryId, attempt, record }) => ({
            delivery_id: deliveryId,
            attempt,
            at: record.at,
            status: record.status,
            latency_ms: record.latencyMs,
            error: record.error,
            response: record.response,
          })),
        )
        .execute()
      // In the order of their ids, so that concurrent batches of several processes lock rows in one order.
      for (const { deliveryId, attempt, record, outcome } of [...attempts].sort((a, b) =>
        a.deliveryId < b.deliveryId ? -1 : 1,
      )) {
        const next = outcome.state === 'pending' ? outcome.nextAttemptAt : null
        await trx
          .updateTable('webhook_deliveries')
          .set((eb) => ({
            state: eb
              .case()
              .when('retry_requested', '=', true)
              .then('pending' as DeliveryState)
              .else(outcome.state as DeliveryState)
              .end(),
            next_attempt_at: eb.case().when('retry_requested', '=', true).then(record.at).else(next).end(),
            retry_requested: false,
            attempts: attempt,
            lease_until: null,
            updated_at: record.at,
          }))
          .where('id', '=', deliveryId)
          .execute()
      }
    })
    return attempts.map(() => undefined)
  }

  /** When the delivery's first attempt was made; undefined before it. */
  async firstAttemptAt(deliveryId: string): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('webhook_attempts')
      .select((eb) => eb.fn.min('at').as('first'))
      .where('delivery_id', '=', deliveryId)
      .executeTakeFirst()
    return row?.first == null ? undefined : Number(row.first)
  }

  /** Ends a delivery without an attempt (its endpoint was disabled). */
  async abandon(deliveryId: string, now: number): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ state: 'failed', next_attempt_at: null, lease_until: null, updated_at: now })
      .where('id', '=', deliveryId)
      .execute()
  }

  /**
   * Makes a delivery of the endpoint due again at `now`, whatever came of it, or right after the attempt under
   * way if there is one; whether there is such a delivery.
   */
  async retry(endpointId: string, deliveryId: string, now: number): Promise<boolean> {
    const delivery = this.#db
      .updateTable('webhook_deliveries')
      .where('id', '=', deliveryId)
      .where('endpoint_id', '=', endpointId)
    const due = await delivery
      .set({ state: 'pending', next_attempt_at: now, updated_at: now })
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
      .executeTakeFirst()
    if (Number(due.numUpdatedRows) > 0) return true
    // Leased: an attempt is under way (or about to be), and the retry follows it.
    const queued = await delivery
      .set({ retry_requested: true, updated_at: now })
      .where('lease_until', '>', now)
      .executeTakeFirst()
    return Number(queued.numUpdatedRows) > 0
  }

  /**
   * The endpoint's deliveries, newest first, with their attempts: one statement, so that a delivery and its
   * attempts are read as of one moment.
   */
  async deliveries(endpointId: string, page: { cursor?: string; limit: number }): Promise<Page<Delivery>> {
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor)
    const deliveries = keysetAfter(
      this.#db
        .selectFrom('webhook_deliveries')
        .innerJoin('events', 'events.id', 'webhook_deliveries.event_id')
        .select([
          'webhook_deliveries.id',
          'webhook_deliveries.event_id',
          'events.type',
          'webhook_deliveries.state',
          'webhook_deliveries.next_attempt_at',
          'webhook_deliveries.created_at',
          'webhook_deliveries.updated_at',
        ])
        .where('webhook_deliveries.endpoint_id', '=', endpointId),
      'webhook_deliveries',
      after,
      fetchSizeFor(page.limit),
    )
    const rows = await this.#db
      .selectFrom(deliveries.as('d'))
      .leftJoin('webhook_attempts as a', 'a.delivery_id', 'd.id')
      .selectAll('d')
      .select(['a.attempt', 'a.at', 'a.status', 'a.latency_ms', 'a.error', 'a.response'])
      .orderBy('d.created_at', 'desc')
      .orderBy('d.id', 'desc')
      .orderBy('a.attempt')
      .execute()
    const byId = new Map<string, Delivery & { created_at: number }>()
    for (const row of rows) {
      let delivery = byId.get(row.id)
      if (!delivery) {
        delivery = {
          id: row.id,
          eventId: row.event_id,
          eventType: row.type,
          state: row.state,
          attempts: [],
          nextAttemptAt: row.next_attempt_at === null ? null : Number(row.next_attempt_at),
          createdAt: Number(row.created_at),
          created_at: Number(row.created_at),
          updatedAt: Number(row.updated_at),
        }
        byId.set(row.id, delivery)
      }
      if (row.attempt !== null && row.at !== null && row.latency_ms !== null) {
        delivery.attempts.push({
          attempt: Number(row.attempt),
          at: Number(row.at),
          status: row.status === null ? null : Number(row.status),
          latencyMs: Number(row.latency_ms),
          error: row.error,
          response: row.response,
        })
      }
    }
    return toPage([...byId.values()], page.limit, ({ created_at, ...delivery }) => delivery)
  }

  /**
   * Removes events older than `before` that no delivery still waits on, with their deliveries and attempts (by
   * foreign key); how many went.
   */
  async purge(before: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('events')
      .where('created_at', '<', before)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_deliveries')
              .select(sql.lit(1).as('one'))
              .whereRef('webhook_deliveries.event_id', '=', 'events.id')
              .where('webhook_deliveries.state', '=', 'pending'),
          ),
        ),
      )
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
