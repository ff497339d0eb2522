// Recording events: in the transaction of the change that causes them (the outbox), so that none is sent for a
// change that rolled back and none is lost for one that committed. An event is recorded only when one of the
// account's active endpoints receives its type, and its data is read only then: a change whose account has no
// webhook pays one indexed lookup. The body is built here, as every endpoint receives it, in the API's shapes
// (`EventShapes`, the serializers of the routes, handed over by wiring.ts).
import type { Transaction } from '../db/database.ts'
import type { StoredFile } from '../files/files.repository.ts'
import { newId } from '../ids.ts'
import type { FileRequest, Submission } from '../requests/requests.repository.ts'
import type { ShareWithFile } from '../shares/shares.repository.ts'
import type { EventType } from './event-types.ts'
import type { EventsRepository, NewEvent } from './events.repository.ts'

/** The API's shapes of what events carry. */
export interface EventShapes {
  file(file: StoredFile): unknown
  share(share: ShareWithFile): unknown
  /** A FileRequestWithCount. */
  request(request: FileRequest): unknown
  submission(submission: Submission): unknown
}

/** Why a file request stopped accepting files. */
export const CLOSED_BECAUSE = ['disabled', 'maxFiles', 'deadline'] as const
export type ClosedBecause = (typeof CLOSED_BECAUSE)[number]

/** The body of an event, as every endpoint receives it. */
export const eventBody = (type: string, at: number, data: unknown) =>
  JSON.stringify({ type, timestamp: new Date(at).toISOString(), data })

/** Who receives an event of `type` from an account: its active endpoints that subscribe to it. */
export interface Audience {
  accountId: string
  type: EventType
  endpointIds: string[]
}

/** The key of an account's audience for a type in `EventRecorder.audiences`. */
export const audienceKey = (accountId: string, type: EventType) => `${accountId} ${type}`

export class EventRecorder {
  readonly #events: EventsRepository
  readonly #shapes: EventShapes

  constructor(deps: { events: EventsRepository; shapes: EventShapes }) {
    this.#events = deps.events
    this.#shapes = deps.shapes
  }

  /**
   * Who would receive an event of `type` from the account, in `trx`; undefined when no one would, and then
   * nothing need be read or recorded.
   */
  async audience(trx: Transaction, accountId: string, type: EventType): Promise<Audience | undefined> {
    const endpointIds = await this.#events.subscribers(trx, accountId, type)
    return endpointIds.length === 0 ? undefined : { accountId, type, endpointIds }
  }

  /**
   * Who would receive events of `types` from each of the accounts, read outside any transaction (for writes
   * batched across accounts, such as counting visits): keyed by `audienceKey`, none for an account and type no
   * one receives.
   */
  async audiences(accountIds: string[], types: EventType[]): Promise<Map<string, Audience>> {
    const audiences = new Map<string, Audience>()
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

  /** Records one event of the audience's type per file. */
  async files(trx: Transaction, audience: Audience, files: StoredFile[]): Promise<void> {
    const now = Date.now()
    await this.#events.insert(
      trx,
      files.map((file) => this.#event(audience, now, this.#shapes.file(file))),
    )
  }

  /** An event about a share link (made, reactivated, viewed, downloaded), with the link as it is now. */
  async share(trx: Transaction, audience: Audience, share: ShareWithFile): Promise<void> {
    await this.shares(trx, [{ audience, share }])
  }

  /** Events about share links, each to its audience: recorded together (a batch of visits). */
  async shares(trx: Transaction, events: { audience: Audience; share: ShareWithFile }[]): Promise<void> {
    const now = Date.now()
    await this.#events.insert(
      trx,
      events.map(({ audience, share }) => this.#event(audience, now, this.#shapes.share(share))),
    )
  }

  /** A file received by a request: the request as it is now, and the Submission. */
  async submission(
    trx: Transaction,
    audience: Audience,
    request: FileRequest,
    submission: Submission,
  ): Promise<void> {
    const data = { request: this.#shapes.request(request), submission: this.#shapes.submission(submission) }
    await this.#record(trx, audience, Date.now(), data)
  }

  /** A request that stopped accepting files, and why. */
  async requestClosed(
    trx: Transaction,
    audience: Audience,
    request: FileRequest,
    reason: ClosedBecause,
  ): Promise<void> {
    await this.#record(trx, audience, Date.now(), { request: this.#shapes.request(request), reason })
  }

  async #record(trx: Transaction, audience: Audience, at: number, data: unknown): Promise<void> {
    await this.#events.insert(trx, [this.#event(audience, at, data)])
  }

  #event(audience: Audience, at: number, data: unknown): { event: NewEvent; endpointIds: string[] } {
    const { accountId, type, endpointIds } = audience
    const event = { id: newId('evt', at), accountId, type, payload: eventBody(type, at, data), createdAt: at }
    return { event, endpointIds }
  }
}
