// API keys: long random bearer secrets with a recognisable prefix (API_KEY_PREFIX). Only a SHA-256 of each
// is stored; the secret is shown once, when the key is created.
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import type { Principal } from '../../platform/auth/principal.ts'
import type { Scope } from '../../platform/auth/scopes.ts'
import { API_KEY_PREFIX, hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import type { Transactor } from '../../platform/db/database.ts'
import { invalid, notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { ApiKey, ApiKeysRepository } from './api-keys.repository.ts'
import type { NewKeyNotes } from './new-key-notes.ts'

const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 6
// Writing last_used_at on every request would turn every read into a write; once a minute is enough.
const LAST_USED_RESOLUTION_MS = 60_000

export class ApiKeysService {
  readonly #keys: ApiKeysRepository
  readonly #transaction: Transactor
  readonly #audit: AuditLog
  /** A new key's secret on its way to the page that shows it once (new-key-notes.ts). */
  readonly notes: NewKeyNotes

  constructor(deps: {
    keys: ApiKeysRepository
    notes: NewKeyNotes
    transaction: Transactor
    audit: AuditLog
  }) {
    this.#keys = deps.keys
    this.#transaction = deps.transaction
    this.#audit = deps.audit
    this.notes = deps.notes
  }

  async create(input: {
    accountId: string
    name: string
    scopes: Scope[]
    /** When the key stops working; undefined or null for never. */
    expiresAt?: number | null
  }): Promise<{ key: ApiKey; secret: string }> {
    const name = input.name.trim()
    if (name.length < 1 || name.length > 100) {
      throw invalid('The key name must be 1 to 100 characters.', undefined, 'name')
    }
    if (input.scopes.length === 0) throw invalid('A key needs at least one scope.', undefined, 'scopes')
    const expiresAt = input.expiresAt ?? null
    if (expiresAt !== null && expiresAt <= Date.now()) {
      throw invalid('The expiry must be in the future.', undefined, 'expiresAt')
    }
    const secret = newSecret(API_KEY_PREFIX)
    const now = Date.now()
    const key: ApiKey = {
      id: newId('key', now),
      accountId: input.accountId,
      name,
      prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
      scopes: input.scopes,
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
      expiresAt,
    }
    await this.#transaction(async (trx) => {
      await this.#keys.insert({ ...key, secretHash: hashSecret(secret) }, trx)
      // Its name and what it may do, never its secret (nor the prefix shown, a part of it).
      await this.#audit.record(trx, {
        accountId: key.accountId,
        kind: 'key.created',
        subjectId: key.id,
        details: {
          name,
          scopes: key.scopes,
          expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
        },
      })
    })
    return { key, secret }
  }

  list(accountId: string): Promise<ApiKey[]> {
    return this.#keys.list(accountId)
  }

  /** Revokes a key; pass `accountId` to confine it to one account's keys. Idempotent. */
  async revoke(id: string, accountId?: string): Promise<ApiKey> {
    await this.#transaction(async (trx) => {
      const revoked = await this.#keys.revoke(id, accountId, trx)
      // Revoked already: nothing changed, nothing to record.
      if (!revoked) return
      await this.#audit.record(trx, {
        accountId: revoked.accountId,
        kind: 'key.revoked',
        subjectId: id,
        details: { name: revoked.name },
      })
    })
    const key = await this.#keys.get(id, accountId)
    if (!key) throw notFound(`API key ${id}`)
    return key
  }

  /** The principal a bearer secret stands for, or undefined if it is unknown, revoked or expired. */
  async authenticate(secret: string): Promise<Principal | undefined> {
    if (!secret.startsWith(API_KEY_PREFIX)) return undefined
    const key = await this.#keys.byHash(hashSecret(secret))
    const now = Date.now()
    if (!key || key.revoked || (key.expiresAt !== null && key.expiresAt <= now)) return undefined
    if (key.lastUsedAt === null || now - key.lastUsedAt > LAST_USED_RESOLUTION_MS) {
      key.lastUsedAt = now
      await this.#keys.recordUse(key.principal.credentialId, now)
    }
    return key.principal
  }
}
