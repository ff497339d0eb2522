// An account's webhook endpoints: where they may point (webhook-targets.ts), their secrets (shown once, when
// made or rotated; webhook-secrets.ts), their deliveries, and test events.
import {
  type AuditDetails,
  type AuditLog,
  changedSettings,
  type SettingsOf,
} from '../../platform/audit/audit-log.ts'
import type { Transaction } from '../../platform/db/database.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { conflict, invalid, notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import { type EventType, PING_EVENT } from './event-types.ts'
import type { Delivery, EventsRepository } from './events.repository.ts'
import { eventBody } from './events.ts'
import type { WebhookSecrets } from './webhook-secrets.ts'
import { checkTarget, TargetRefused } from './webhook-targets.ts'
import type {
  EndpointChanges,
  EndpointRefusal,
  WebhookEndpoint,
  WebhooksRepository,
} from './webhooks.repository.ts'

/** How long the secret before a rotation keeps signing, so that receivers can change theirs meanwhile. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000

/**
 * Endpoints an account may have: enough for every use we know of, and a bound on the requests one event makes
 * (each visit of a link, say, is posted to every endpoint that listens for it).
 */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20

function refused(refusal: EndpointRefusal, url: string) {
  return refusal === 'too-many'
    ? conflict(
        `This account has ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints, the most it may have.`,
        'Delete one you no longer use, or have one endpoint listen for more event types.',
      )
    : conflict(
        `This account has a webhook endpoint for ${url} already.`,
        'Change that endpoint’s event types instead, or give another URL.',
        'url',
      )
}

/**
 * What the audit log says of an endpoint: where it points, by the URL's origin alone (a receiver's URL often
 * carries its own secret in its path or query, as a chat's incoming webhook does), what it listens for, and
 * whether it is on. Never its signing secret, nor which generation of it signs.
 */
export function webhookAuditDetails(endpoint: WebhookEndpoint): AuditDetails {
  return { origin: new URL(endpoint.url).origin, events: endpoint.events, isActive: endpoint.isActive }
}

/** The settings an owner changes, by the API's names, and how each is compared. */
const SETTINGS: SettingsOf<WebhookEndpoint> = {
  url: (endpoint) => endpoint.url,
  events: (endpoint) => endpoint.events.join(' '),
  description: (endpoint) => endpoint.description,
  isActive: (endpoint) => endpoint.isActive,
}

export interface NewEndpoint {
  url: string
  events: EventType[]
  description?: string | null
}

export class WebhooksService {
  readonly #webhooks: WebhooksRepository
  readonly #events: EventsRepository
  readonly #secrets: WebhookSecrets
  readonly #allowPrivate: boolean
  readonly #audit: AuditLog

  constructor(deps: {
    webhooks: WebhooksRepository
    events: EventsRepository
    secrets: WebhookSecrets
    /** WEBHOOKS_ALLOW_PRIVATE (webhook-targets.ts). */
    allowPrivate: boolean
    /** Records webhook.created, webhook.changed and webhook.deleted, in the transactions that make them. */
    audit: AuditLog
  }) {
    this.#webhooks = deps.webhooks
    this.#events = deps.events
    this.#secrets = deps.secrets
    this.#allowPrivate = deps.allowPrivate
    this.#audit = deps.audit
  }

  list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<WebhookEndpoint>> {
    return this.#webhooks.list(accountId, page)
  }

  async get(accountId: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.#webhooks.get(accountId, id)
    if (!endpoint) throw notFound(`Webhook ${id}`)
    return endpoint
  }

  /** Makes an active endpoint; its secret comes with it, the one time it is shown. */
  async create(accountId: string, input: NewEndpoint): Promise<WebhookEndpoint & { secret: string }> {
    const url = await this.#checkedUrl(input.url)
    const now = Date.now()
    const endpoint: WebhookEndpoint = {
      id: newId('whk', now),
      accountId,
      url,
      events: [...new Set(input.events)].sort(),
      description: input.description ?? null,
      isActive: true,
      secretGeneration: 1,
      previousSecretUntil: null,
      failingSince: null,
      disabledReason: null,
      createdAt: now,
      updatedAt: now,
    }
    const refusal = await this.#webhooks.insert(endpoint, MAX_ENDPOINTS_PER_ACCOUNT, (trx, made) =>
      this.#record(trx, 'webhook.created', made),
    )
    if (refusal) throw refused(refusal, url)
    return { ...endpoint, secret: await this.#secrets.secretOf(endpoint.id, endpoint.secretGeneration) }
  }

  /** Changes what is given; a new URL is checked as a new endpoint's is. Enabling it forgets its failures. */
  async update(accountId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpoint> {
    const url = changes.url === undefined ? undefined : await this.#checkedUrl(changes.url)
    const events = changes.events && [...new Set(changes.events)].sort()
    const updated = await this.#webhooks.update(accountId, id, { ...changes, url, events }, (trx, change) => {
      const { before, after } = change
      const changed = changedSettings(SETTINGS, before, after)
      // A change that changed nothing (the same values again) is not one to record.
      return changed.length === 0
        ? Promise.resolve()
        : this.#record(trx, 'webhook.changed', after, { changed })
    })
    if (!updated) throw notFound(`Webhook ${id}`)
    if (typeof updated === 'string') throw refused(updated, url ?? '')
    return updated
  }

  async delete(accountId: string, id: string): Promise<void> {
    const deleted = await this.#webhooks.delete(accountId, id, (trx, endpoint) =>
      this.#record(trx, 'webhook.deleted', endpoint),
    )
    if (!deleted) throw notFound(`Webhook ${id}`)
  }

  /** An entry of the audit log about the endpoint, in the transaction of the change it records. */
  #record(
    trx: Transaction,
    kind: 'webhook.created' | 'webhook.changed' | 'webhook.deleted',
    endpoint: WebhookEndpoint,
    extra: AuditDetails = {},
  ): Promise<void> {
    return this.#audit.record(trx, {
      accountId: endpoint.accountId,
      kind,
      subjectId: endpoint.id,
      details: { ...extra, ...webhookAuditDetails(endpoint) },
    })
  }

  /** A new secret, shown this once; the one before signs too for ROTATION_GRACE_MS. */
  async rotateSecret(accountId: string, id: string): Promise<WebhookEndpoint & { secret: string }> {
    const rotated = await this.#webhooks.rotateSecret(
      accountId,
      id,
      Date.now() + ROTATION_GRACE_MS,
      (trx, endpoint) =>
        // That it was rotated, never the secret (nor its generation, from which with the server's key it follows).
        this.#record(trx, 'webhook.changed', endpoint, { changed: ['secret'] }),
    )
    if (!rotated) throw notFound(`Webhook ${id}`)
    return { ...rotated, secret: await this.#secrets.secretOf(rotated.id, rotated.secretGeneration) }
  }

  async deliveries(
    accountId: string,
    id: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<Delivery>> {
    await this.get(accountId, id)
    return this.#events.deliveries(id, page)
  }

  /** Sends a delivery again now, whatever came of it before. */
  async retry(accountId: string, id: string, deliveryId: string): Promise<void> {
    await this.get(accountId, id)
    if (!(await this.#events.retry(id, deliveryId, Date.now()))) throw notFound(`Delivery ${deliveryId}`)
  }

  /** Records a test event for the endpoint alone; returns its id. */
  async ping(accountId: string, id: string): Promise<{ eventId: string }> {
    const endpoint = await this.get(accountId, id)
    if (!endpoint.isActive) {
      throw conflict(
        `Webhook ${id} is disabled.`,
        'Enable it with PATCH {"isActive": true}, then send the test again.',
      )
    }
    const now = Date.now()
    const eventId = newId('evt', now)
    const data = { webhookId: endpoint.id, message: 'A test event from Coffer.' }
    await this.#events.insertAlone(
      { id: eventId, accountId, type: PING_EVENT, payload: eventBody(PING_EVENT, now, data), createdAt: now },
      endpoint.id,
    )
    return { eventId }
  }

  async #checkedUrl(raw: string): Promise<string> {
    try {
      return (await checkTarget(raw, this.#allowPrivate)).href
    } catch (error) {
      if (!(error instanceof TargetRefused)) throw error
      throw invalid(
        `The request body "url" cannot receive webhooks: ${error.message}`,
        'Give an https:// URL of a server reachable from the internet.',
        'url',
      )
    }
  }
}
