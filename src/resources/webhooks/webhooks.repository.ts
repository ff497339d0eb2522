// An account's webhook endpoints: their SQL and row mapping.
import { type Kysely, type Selectable, sql } from 'kysely'
import type { Db, Executor, Transaction } from '../../platform/db/database.ts'
import type { Engine } from '../../platform/db/engine.ts'
import { decodeCursor, fetchSizeFor, keysetAfter, type Page, toPage } from '../../platform/db/pagination.ts'
import type { Database } from '../../platform/db/schema.ts'
import { type EventType, isEventType } from './event-types.ts'
import type { WebhookEndpointsTable } from './webhooks.tables.ts'

export interface WebhookEndpoint {
  id: string
  accountId: string
  url: string
  events: EventType[]
  description: string | null
  isActive: boolean
  /** Which of its secrets signs now (webhook-secrets.ts). */
  secretGeneration: number
  /** Until when the secret of the generation before signs too (a rotation's grace). */
  previousSecretUntil: number | null
  /** Since when every delivery to it has failed; null while it answers. */
  failingSince: number | null
  /** Why Coffer disabled it; null when it did not. */
  disabledReason: string | null
  createdAt: number
  updatedAt: number
}

/** What an owner may change of an endpoint; a property left out stays as it is. */
export interface EndpointChanges {
  url?: string
  events?: EventType[]
  description?: string | null
  isActive?: boolean
}

/** The stored form of a set of event types: each between spaces, so that `LIKE '% type %'` finds one. */
export const storedEventTypes = (events: EventType[]) => ` ${[...new Set(events)].sort().join(' ')} `

function toEndpoint(row: Selectable<WebhookEndpointsTable>): WebhookEndpoint {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    events: row.event_types.split(' ').filter(isEventType),
    description: row.description,
    isActive: Boolean(row.is_active),
    secretGeneration: Number(row.secret_generation),
    previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until),
    failingSince: row.failing_since === null ? null : Number(row.failing_since),
    disabledReason: row.disabled_reason,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

/** What else a change of an endpoint does in its transaction (the audit log's entry of it). */
export type AlsoInTransaction<T> = (trx: Transaction, result: T) => Promise<void>

/** Why an endpoint could not be added, or a URL given to one. */
export type EndpointRefusal = 'too-many' | 'duplicate-url'

export class WebhooksRepository {
  readonly #db: Kysely<Database>
  readonly #engine: Engine

  constructor(db: Db) {
    this.#db = db.kysely
    this.#engine = db.engine
  }

  /**
   * Runs `work` in a transaction that holds the account's endpoints still: on PostgreSQL, a transaction lock on
   * the account's webhooks, so that two requests at once cannot both see room for one more or a URL unused;
   * SQLite's transactions exclude each other already.
   */
  #withEndpointsLocked<T>(accountId: string, work: (trx: Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction().execute(async (trx) => {
      if (this.#engine === 'postgres') {
        await sql`select pg_advisory_xact_lock(hashtext(${`coffer:webhooks:${accountId}`}))`.execute(trx)
      }
      return work(trx)
    })
  }

  /** Why `url` may not be the account's endpoint's (`except` an endpoint that may keep it), if it may not. */
  async #refusal(
    trx: Transaction,
    accountId: string,
    url: string | undefined,
    limit: number | undefined,
    except?: string,
  ): Promise<EndpointRefusal | undefined> {
    const rows = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'url'])
      .where('account_id', '=', accountId)
      .execute()
    if (url !== undefined && rows.some((row) => row.url === url && row.id !== except)) return 'duplicate-url'
    if (limit !== undefined && rows.length >= limit) return 'too-many'
    return undefined
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<WebhookEndpoint>> {
    const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor)
    const rows = await keysetAfter(
      this.#db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId),
      'webhook_endpoints',
      after,
      fetchSizeFor(page.limit),
    ).execute()
    return toPage(rows, page.limit, toEndpoint)
  }

  async get(
    accountId: string,
    id: string,
    executor: Executor = this.#db,
  ): Promise<WebhookEndpoint | undefined> {
    const row = await executor
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst()
    return row && toEndpoint(row)
  }

  /** The endpoint by id alone, for its deliveries. */
  async byId(id: string): Promise<WebhookEndpoint | undefined> {
    const row = await this.#db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toEndpoint(row)
  }

  /** Adds the endpoint, unless the account has `limit` already or one with its URL; `also` when it does. */
  async insert(
    endpoint: WebhookEndpoint,
    limit: number,
    also: AlsoInTransaction<WebhookEndpoint>,
  ): Promise<EndpointRefusal | undefined> {
    return this.#withEndpointsLocked(endpoint.accountId, async (trx) => {
      const refusal = await this.#refusal(trx, endpoint.accountId, endpoint.url, limit)
      if (refusal) return refusal
      await this.#insert(trx, endpoint)
      await also(trx, endpoint)
      return undefined
    })
  }

  async #insert(trx: Transaction, endpoint: WebhookEndpoint): Promise<void> {
    await trx
      .insertInto('webhook_endpoints')
      .values({
        id: endpoint.id,
        account_id: endpoint.accountId,
        url: endpoint.url,
        event_types: storedEventTypes(endpoint.events),
        description: endpoint.description,
        is_active: endpoint.isActive,
        secret_generation: endpoint.secretGeneration,
        previous_secret_until: endpoint.previousSecretUntil,
        failing_since: endpoint.failingSince,
        disabled_reason: endpoint.disabledReason,
        created_at: endpoint.createdAt,
        updated_at: endpoint.updatedAt,
      })
      .execute()
  }

  /**
   * Applies `changes`, unless they would give it the URL of another of the account's; enabling it again forgets
   * its failures. Returns the endpoint as it is now, or undefined when the account has none by that id; `also`
   * is given it as it was before and as it is now.
   */
  async update(
    accountId: string,
    id: string,
    changes: EndpointChanges,
    also: AlsoInTransaction<{ before: WebhookEndpoint; after: WebhookEndpoint }>,
  ): Promise<WebhookEndpoint | EndpointRefusal | undefined> {
    return this.#withEndpointsLocked(accountId, async (trx) => {
      if (changes.url !== undefined) {
        const refusal = await this.#refusal(trx, accountId, changes.url, undefined, id)
        if (refusal) return refusal
      }
      // Read under the account's lock, which every change of its endpoints by its owner takes.
      const before = await this.get(accountId, id, trx)
      const after = before && (await this.#update(trx, accountId, id, changes))
      if (before && after) await also(trx, { before, after })
      return after
    })
  }

  async #update(
    executor: Executor,
    accountId: string,
    id: string,
    changes: EndpointChanges,
  ): Promise<WebhookEndpoint | undefined> {
    const enabled = changes.isActive === true
    const row = await executor
      .updateTable('webhook_endpoints')
      .set({
        ...(changes.url === undefined ? {} : { url: changes.url }),
        ...(changes.events === undefined ? {} : { event_types: storedEventTypes(changes.events) }),
        ...(changes.description === undefined ? {} : { description: changes.description }),
        ...(changes.isActive === undefined ? {} : { is_active: changes.isActive }),
        ...(enabled ? { failing_since: null, disabled_reason: null } : {}),
        updated_at: Date.now(),
      })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .returningAll()
      .executeTakeFirst()
    return row && toEndpoint(row)
  }

  /** Starts the next secret generation; the one before signs too until `previousUntil`. */
  async rotateSecret(
    accountId: string,
    id: string,
    previousUntil: number,
    also: AlsoInTransaction<WebhookEndpoint>,
  ): Promise<WebhookEndpoint | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const rotated = await this.#rotate(trx, accountId, id, previousUntil)
      if (rotated) await also(trx, rotated)
      return rotated
    })
  }

  async #rotate(
    trx: Transaction,
    accountId: string,
    id: string,
    previousUntil: number,
  ): Promise<WebhookEndpoint | undefined> {
    const row = await trx
      .updateTable('webhook_endpoints')
      .set((eb) => ({
        secret_generation: eb('secret_generation', '+', 1),
        previous_secret_until: previousUntil,
        updated_at: Date.now(),
      }))
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .returningAll()
      .executeTakeFirst()
    return row && toEndpoint(row)
  }

  /** Deletes the endpoint with its deliveries; whether there was one (`also` is given it as it was). */
  async delete(accountId: string, id: string, also: AlsoInTransaction<WebhookEndpoint>): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .deleteFrom('webhook_endpoints')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .returningAll()
        .executeTakeFirst()
      if (row) await also(trx, toEndpoint(row))
      return row !== undefined
    })
  }

  /** A delivery succeeded: the endpoint answers. */
  async markAnswering(id: string): Promise<void> {
    await this.#db
      .updateTable('webhook_endpoints')
      .set({ failing_since: null })
      .where('id', '=', id)
      .where('failing_since', 'is not', null)
      .execute()
  }

  /**
   * A delivery failed at `now`: the endpoint has failed since then unless it already had. Returns since when it
   * has been failing.
   */
  async markFailing(id: string, now: number): Promise<number | undefined> {
    await this.#db
      .updateTable('webhook_endpoints')
      .set({ failing_since: now })
      .where('id', '=', id)
      .where('failing_since', 'is', null)
      .execute()
    const row = await this.#db
      .selectFrom('webhook_endpoints')
      .select('failing_since')
      .where('id', '=', id)
      .executeTakeFirst()
    return row?.failing_since == null ? undefined : Number(row.failing_since)
  }

  /** Disables an endpoint that has failed too long, saying why; whether it was active. */
  async disableFailing(id: string, reason: string, executor: Executor = this.#db): Promise<boolean> {
    const result = await executor
      .updateTable('webhook_endpoints')
      .set({ is_active: false, disabled_reason: reason, updated_at: Date.now() })
      .where('id', '=', id)
      .where('is_active', '=', true)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }
}
