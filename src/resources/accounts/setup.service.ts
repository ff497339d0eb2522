// The first run: while no account exists, each start of the server makes a one-time link (printed, never
// logged) that creates the first account. Any link made since works until the first account exists; then
// all of them stop working, and later accounts come from the CLI or, when SIGNUP=open, the sign-up page.
import { hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import { AppError } from '../../platform/errors.ts'
import type { Account, AccountsRepository } from './accounts.repository.ts'
import type { AccountsService } from './accounts.service.ts'
import type { SetupLinksRepository } from './setup-links.repository.ts'

/** The recognisable prefix lets the request logger redact a link's secret from the URLs it logs. */
export const SETUP_SECRET_PREFIX = 'coffer_setup_'
const LINK_LIFETIME_MS = 24 * 60 * 60 * 1000

const used = () =>
  new AppError(
    'gone',
    'This setup link was used or has expired.',
    'Sign in, or restart the server for a new link if no account exists yet.',
  )

export class SetupService {
  readonly #links: SetupLinksRepository
  readonly #accountsRepository: AccountsRepository
  readonly #accounts: AccountsService

  constructor(deps: {
    links: SetupLinksRepository
    accountsRepository: AccountsRepository
    accounts: AccountsService
  }) {
    this.#links = deps.links
    this.#accountsRepository = deps.accountsRepository
    this.#accounts = deps.accounts
  }

  /** Whether the first account is still to be made. */
  async pending(): Promise<boolean> {
    return !(await this.#accountsRepository.any())
  }

  /** A new one-time setup secret, if no account exists yet; undefined otherwise. */
  async issue(): Promise<string | undefined> {
    if (!(await this.pending())) return undefined
    const now = Date.now()
    await this.#links.deleteExpired(now)
    const secret = newSecret(SETUP_SECRET_PREFIX, 32)
    await this.#links.insert(hashSecret(secret), now, now + LINK_LIFETIME_MS)
    return secret
  }

  purgeExpired(now = Date.now()): Promise<void> {
    return this.#links.deleteExpired(now)
  }

  /** Whether the secret opens the setup page (no account exists, the link is known and not expired). */
  async isValid(secret: string): Promise<boolean> {
    if (!secret.startsWith(SETUP_SECRET_PREFIX) || secret.length > 128) return false
    return (await this.pending()) && this.#links.isValid(hashSecret(secret), Date.now())
  }

  /** Creates the first account, an admin; a link that was used, expired or came after an account is a 410. */
  async redeem(secret: string, input: { email: string; password: string }): Promise<Account> {
    if (!(await this.isValid(secret))) throw used()
    return this.#accounts.create(
      { ...input, role: 'admin' },
      {
        via: 'setup',
        signsIn: true,
        admit: async (trx) => {
          const taken = await this.#links.takeAll(trx, hashSecret(secret), Date.now())
          if (!taken || (await this.#accountsRepository.any(trx))) throw used()
        },
      },
    )
  }
}
