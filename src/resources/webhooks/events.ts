// Recording events: in the transaction of the change that causes them (the outbox), so that none is sent for a
// change that rolled back and none is lost for one that committed. An event is recorded only when one of the
// account's active endpoints receives its type, and its data is read only then: a change whose account has no
// webhook pays one indexed lookup. The body is built here, as every endpoint receives it, in the API's shapes
// (`EventShapes`, the serializers of the routes, handed over by wiring.ts). What each type is recorded from is
// the resource's to say (`FileEvents`, `ShareEvents`, `RequestEvents`): this module knows none of them.
import type { Transaction } from '../../platform/db/database.ts'
import { newId } from '../../platform/ids.ts'
import type { EventType } from './event-types.ts'
import type { EventsRepository, NewEvent } from './events.repository.ts'

/** What events of some types are recorded from, by type: a resource's domain values (files, links...). */
export type EventData = { [T in EventType]?: unknown }

/** How each type's data becomes the `data` of its body: the API's shapes, as the API answers. */
export type EventShapes<D extends EventData> = { [T in keyof D]-?: (data: NonNullable<D[T]>) => unknown }

/** The body of an event, as every endpoint receives it. */
export const eventBody = (type: string, at: number, data: unknown) =>
  JSON.stringify({ type, timestamp: new Date(at).toISOString(), data })

/** Who receives an event of `type` from an account: its active endpoints that subscribe to it. */
export interface Audience<T extends EventType = EventType> {
  accountId: string
  type: T
  endpointIds: string[]
}

/** The key of an account's audience for a type in `EventLog.audiences`. */
export const audienceKey = (accountId: string, type: EventType) => `${accountId} ${type}`

/** Recording events of the types of `D`, as a resource's services see it. */
export interface EventLog<D extends EventData> {
  /**
   * Who would receive an event of `type` from the account, in `trx`; undefined when no one would, and then
   * nothing need be read or recorded.
   */
  audience<T extends keyof D & EventType>(
    trx: Transaction,
    accountId: string,
    type: T,
  ): Promise<Audience<T> | undefined>
  /**
   * Who would receive events of `types` from each of the accounts, read outside any transaction (for writes
   * batched across accounts, such as counting visits): keyed by `audienceKey`, none for an account and type no
   * one receives.
   */
  audiences<T extends keyof D & EventType>(
    accountIds: string[],
    types: T[],
  ): Promise<Map<string, Audience<T>>>
  /** Records one event of the audience's type for each of `items`, in `trx`. */
  record<T extends keyof D & EventType>(
    trx: Transaction,
    audience: Audience<T>,
    items: NonNullable<D[T]>[],
  ): Promise<void>
  /** Records events of several audiences together (a batch of visits): one for each. */
  recordEach<T extends keyof D & EventType>(
    trx: Transaction,
    events: { audience: Audience<T>; item: NonNullable<D[T]> }[],
  ): Promise<void>
}

export class EventRecorder<D extends { [T in EventType]: unknown }> implements EventLog<D> {
  readonly #events: EventsRepository
  readonly #shapes: EventShapes<D>

  constructor(deps: { events: EventsRepository; shapes: EventShapes<D> }) {
    this.#events = deps.events
    this.#shapes = deps.shapes
  }

  async audience<T extends keyof D & EventType>(
    trx: Transaction,
    accountId: string,
    type: T,
  ): Promise<Audience<T> | undefined> {
    const endpointIds = await this.#events.subscribers(trx, accountId, type)
    return endpointIds.length === 0 ? undefined : { accountId, type, endpointIds }
  }

  async audiences<T extends keyof D & EventType>(
    accountIds: string[],
    types: T[],
  ): Promise<Map<string, Audience<T>>> {
    const audiences = new Map<string, Audience<T>>()
    if (accountIds.length === 0) return audiences
    for (const endpoint of await this.#events.subscribersOfAccounts(accountIds, types)) {
      for (const type of types) {
        if (!endpoint.types.includes(type)) continue
        const key = audienceKey(endpoint.accountId, type)
        const audience = audiences.get(key) ?? { accountId: endpoint.accountId, type, endpointIds: [] }
        audience.endpointIds.push(endpoint.id)
        audiences.set(key, audience)
      }
    }
    return audiences
  }

  async record<T extends keyof D & EventType>(
    trx: Transaction,
    audience: Audience<T>,
    items: NonNullable<D[T]>[],
  ): Promise<void> {
    await this.recordEach(
      trx,
      items.map((item) => ({ audience, item })),
    )
  }

  async recordEach<T extends keyof D & EventType>(
    trx: Transaction,
    events: { audience: Audience<T>; item: NonNullable<D[T]> }[],
  ): Promise<void> {
    if (events.length === 0) return
    const now = Date.now()
    await this.#events.insert(
      trx,
      events.map(({ audience, item }) => this.#event(audience, now, this.#shapes[audience.type](item))),
    )
  }

  #event(audience: Audience, at: number, data: unknown): { event: NewEvent; endpointIds: string[] } {
    const { accountId, type, endpointIds } = audience
    const event = { id: newId('evt', at), accountId, type, payload: eventBody(type, at, data), createdAt: at }
    return { event, endpointIds }
  }
}
