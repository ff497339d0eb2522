// Sessions of the web pages: a random secret in a cookie, a row holding only its SHA-256. A session ends when
// its browser signs out, after SESSION_IDLE_MS without a request, at SESSION_MAX_AGE_MS whatever the
// activity, when its account signs out everywhere or changes its password, and when the account is disabled.
import { hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import { newId } from '../../platform/ids.ts'
import type { Account } from './accounts.repository.ts'
import type { SessionAccount, SessionsRepository } from './sessions.repository.ts'

export const SESSION_IDLE_MS = 7 * 24 * 60 * 60 * 1000
export const SESSION_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000
// Recording every request would turn each page view into a write; the idle expiry needs no finer step.
const LAST_SEEN_RESOLUTION_MS = 60_000

export interface Session {
  id: string
  /** The account, with what it stores against its quota when read with the session (not at a sign-in). */
  account: Account & Partial<Pick<SessionAccount, 'usage'>>
  /** The account's webhook endpoints disabled by Coffer after failing deliveries (the header tells of them). */
  failedWebhooks: number
}

export class SessionsService {
  readonly #sessions: SessionsRepository

  constructor(deps: { sessions: SessionsRepository }) {
    this.#sessions = deps.sessions
  }

  /** A new session for the account; the secret goes in the cookie and nowhere else. */
  async start(account: Account): Promise<{ session: Session; secret: string; maxAgeMs: number }> {
    const now = Date.now()
    const secret = newSecret('', 32)
    const id = newId('ses', now)
    await this.#sessions.insert({
      id,
      secretHash: hashSecret(secret),
      accountId: account.id,
      createdAt: now,
      expiresAt: now + SESSION_MAX_AGE_MS,
    })
    return { session: { id, account, failedWebhooks: 0 }, secret, maxAgeMs: SESSION_MAX_AGE_MS }
  }

  /** The session a cookie's secret stands for, while it lasts; undefined otherwise. */
  async resume(secret: string | undefined): Promise<Session | undefined> {
    if (!secret || secret.length > 128) return undefined
    const stored = await this.#sessions.bySecretHash(hashSecret(secret))
    if (!stored) return undefined
    const now = Date.now()
    if (stored.accountDisabled || stored.expiresAt <= now || stored.lastSeenAt + SESSION_IDLE_MS <= now) {
      await this.#sessions.delete(stored.id)
      return undefined
    }
    if (now - stored.lastSeenAt > LAST_SEEN_RESOLUTION_MS) await this.#sessions.touch(stored.id, now)
    return { id: stored.id, account: stored.account, failedWebhooks: stored.failedWebhooks }
  }

  end(sessionId: string): Promise<void> {
    return this.#sessions.delete(sessionId)
  }

  /** Signs the account out everywhere, or everywhere but `except`. */
  endAll(accountId: string, except?: string): Promise<void> {
    return this.#sessions.deleteOfAccount(accountId, except)
  }

  purgeExpired(now = Date.now()): Promise<number> {
    return this.#sessions.deleteExpired(now, now - SESSION_IDLE_MS)
  }
}
