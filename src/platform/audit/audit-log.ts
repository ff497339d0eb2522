// Recording who did what: each entry is written in the transaction of the change it records (a change that
// rolls back leaves none, one that commits always has one). The services say what happened and to which
// account; who did it and from where comes from the request in flight (its credential or session, and its
// client address), kept for the request by @fastify/request-context (registered by http/audit-context.ts), so
// no service passes them along. Outside any request (a background job, the admin command) the actor is the one
// the log was built with.
import { requestContext } from '@fastify/request-context'
import type { Executor } from '../db/database.ts'
import { newId } from '../ids.ts'
import type { AuditEntriesRepository } from './audit-entries.repository.ts'
import type { AuditKind } from './audit-kinds.ts'

const ACTOR_TYPES = ['account', 'key', 'oauth_client', 'admin', 'admin_command', 'visitor', 'system'] as const

/**
 * Who did something: the account itself in the app (`account`), one of its API keys (`key`, with the key's name),
 * an application it allowed (`oauth_client`, with the application's name), an admin on the admin's pages
 * (`admin`, with their email), the admin command on the server, someone without an account (`visitor`: a sign-in
 * attempt, a submitter), or the service itself (`system`: a deadline passing, the trash's purge).
 */
export interface Actor {
  type: (typeof ACTOR_TYPES)[number]
  /** The account, key or application's ID; null for the admin command, a visitor and the system. */
  id: string | null
  /** What a person knows it by: the account's email, the key's or application's name. */
  name: string | null
}

export const VISITOR: Actor = { type: 'visitor', id: null, name: null }
export const SYSTEM: Actor = { type: 'system', id: null, name: null }
export const ADMIN_COMMAND: Actor = { type: 'admin_command', id: null, name: null }

/** What an entry's `details` may hold: short values that say what changed, never a secret. */
export type AuditDetails = Record<string, string | number | boolean | null | readonly string[]>

/** How each setting of a resource is read for comparison, by the name its API gives the setting. */
export type SettingsOf<T> = Record<string, (resource: T) => unknown>

/**
 * The names of the settings whose values differ between a resource `before` a change and `after` it: what a
 * `*.changed` entry lists (an empty list, a change that changed nothing, is not recorded).
 */
export function changedSettings<T>(settings: SettingsOf<T>, before: T, after: T): string[] {
  return Object.entries(settings)
    .filter(([, value]) => value(before) !== value(after))
    .map(([name]) => name)
}

export interface AuditEntryInput {
  /** The account the entry belongs to (whose activity it is); null for one that belongs to none. */
  accountId: string | null
  kind: AuditKind
  /** What it was done to (a file, a link, a key...), by ID. */
  subjectId?: string | null
  details?: AuditDetails
  /** Who did it, when the request's credential does not say it (a sign-in: the account it signed in to). */
  actor?: Actor
}

/** Who acts and from where, for the request in flight. */
export interface AuditContext {
  actor: Actor
  address: string | null
}

declare module '@fastify/request-context' {
  interface RequestContextData {
    audit: AuditContext
  }
}

/**
 * Says who the request in flight acts as: called once its credential or session is known, and by the admin's
 * pages (an admin acting on another account). Outside a request it does nothing.
 */
export function actAs(actor: Actor, address?: string): void {
  const context = requestContext.get('audit')
  if (!context) return
  context.actor = actor
  if (address !== undefined) context.address = address
}

/** The request in flight's actor and address; undefined outside a request. */
export function auditContext(): AuditContext | undefined {
  return requestContext.get('audit')
}

export class AuditLog {
  readonly #entries: AuditEntriesRepository
  readonly #outsideRequests: Actor

  /** `outsideRequests`: who acts when no request is in flight (the system, or the admin command). */
  constructor(deps: { entries: AuditEntriesRepository; outsideRequests: Actor }) {
    this.#entries = deps.entries
    this.#outsideRequests = deps.outsideRequests
  }

  /** Records one entry in `trx`, the transaction of the change (or the database, for a refusal). */
  async record(trx: Executor, entry: AuditEntryInput): Promise<void> {
    await this.recordEach(trx, [entry])
  }

  /** Records several entries in `trx` together (a batch of files trashed), in one statement. */
  async recordEach(trx: Executor, entries: readonly AuditEntryInput[]): Promise<void> {
    if (entries.length === 0) return
    const context = auditContext()
    const now = Date.now()
    await this.#entries.insert(
      trx,
      entries.map((entry) => {
        const actor = entry.actor ?? context?.actor ?? this.#outsideRequests
        return {
          id: newId('aud', now),
          created_at: now,
          account_id: entry.accountId,
          kind: entry.kind,
          actor_type: actor.type,
          actor_id: actor.id,
          actor_name: actor.name,
          // What the service does on its own (a purge run out of turn by a request) comes from no client.
          address:
            actor.type === 'system' || actor.type === 'admin_command' ? null : (context?.address ?? null),
          subject_id: entry.subjectId ?? null,
          details: JSON.stringify(entry.details ?? {}),
        }
      }),
    )
  }
}
