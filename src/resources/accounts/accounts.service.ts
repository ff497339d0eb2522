// Accounts: who owns files. Created by the CLI, the first-run setup link and, when SIGNUP=open, the sign-up
// page; signed in to with a password (scrypt), with failed sign-ins and new accounts limited in number.
import { type Actor, type AuditDetails, type AuditLog, VISITOR } from '../../platform/audit/audit-log.ts'
import { hashPassword, verifyPassword } from '../../platform/auth/secrets.ts'
import type { SignUpConfig } from '../../platform/config.ts'
import type { Executor, Transaction, Transactor } from '../../platform/db/database.ts'
import { conflict, invalid, notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { Account, AccountsRepository, FailedSignIn } from './accounts.repository.ts'
import type { AccountRole } from './accounts.tables.ts'
import type { ApiKeysRepository } from './api-keys.repository.ts'
import type { DeviceToken, KnownDevices } from './known-devices.ts'
import type { SessionsRepository } from './sessions.repository.ts'
import { assertSignUpAllowed } from './sign-up-policy.ts'

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const MIN_PASSWORD_LENGTH = 8
export const MAX_PASSWORD_LENGTH = 1024

/** How an account came to be (`details.via` of `account.created`). */
export type AccountOrigin = 'setup' | 'invitation' | 'sign_up' | 'sso' | 'admin_command'

/** How someone signed in (`details.method` of `account.signed_in` and `account.sign_in_failed`). */
export type SignInMethod = 'password' | 'sso' | 'invitation' | 'setup' | 'sign_up'

/** Who the audit log names for what an account does itself (platform/audit): the account, by its email. */
export const accountActor = (account: { id: string; email: string }): Actor => ({
  type: 'account',
  id: account.id,
  name: account.email,
})

/** How a new account is made: `via` says where, for the audit log; see `AccountsService.create`. */
export interface AccountCreation {
  via: AccountOrigin
  /** Whoever makes it signs in to it at once (setup, invitation, sign-up): recorded with its creation. */
  signsIn?: boolean
  /** Runs in the same transaction before the insert, and may refuse (a setup link, an invitation taken). */
  admit?: (trx: Transaction, account: Account) => Promise<void>
  /** What else the audit entry of its creation says (the invitation it came from). */
  details?: AuditDetails
}

/** A hash no password matches, checked when there is no account, so that both answers take as long. */
let decoyHash: Promise<string> | undefined
const decoy = () => {
  decoyHash ??= hashPassword(`decoy ${Math.random()}`)
  return decoyHash
}

export function checkNewPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw invalid(
      `The password must be at least ${MIN_PASSWORD_LENGTH} characters long (and at most ${MAX_PASSWORD_LENGTH}).`,
      undefined,
      'password',
    )
  }
}

export function normaliseEmail(email: string): string {
  const trimmed = email.trim().toLowerCase()
  if (trimmed.length > 254 || !EMAIL.test(trimmed)) {
    throw invalid(`"${email}" is not a valid email address.`, undefined, 'email')
  }
  return trimmed
}

/** The address a refused sign-in tried, for an entry of no account: kept only when it is one. */
function triedAddress(email: string): { email: string } | { emailMalformed: true } {
  try {
    return { email: normaliseEmail(email) }
  } catch {
    return { emailMalformed: true }
  }
}

/**
 * Throttled sign-ins recorded lately, by client address: a client refused again and again is recorded once a
 * minute, so that hammering the form cannot flood the log (and the owner's activity) with a row per attempt.
 * In this process's memory, bounded: a fleet records at most once a minute per process.
 */
class ThrottledNotes {
  static readonly INTERVAL_MS = 60_000
  static readonly MAX_CLIENTS = 10_000
  readonly #until = new Map<string, number>()

  /** Whether a throttled refusal of `client` is to be recorded now (and then not again for a minute). */
  take(client: string, now = Date.now()): boolean {
    const until = this.#until.get(client)
    if (until !== undefined && until > now) return false
    this.#until.delete(client)
    if (this.#until.size >= ThrottledNotes.MAX_CLIENTS) {
      const oldest = this.#until.keys().next().value
      if (oldest !== undefined) this.#until.delete(oldest)
    }
    this.#until.set(client, now + ThrottledNotes.INTERVAL_MS)
    return true
  }
}

/** What a count of attempts answers: whether one more may go ahead, and if not, how long until one may. */
export interface AttemptDecision {
  allowed: boolean
  /** Microseconds until one more attempt is allowed (0 when this one was). */
  retryAfterUs: number
}

/** Attempts counted per bucket under one policy: a burst of `limit`, refilled smoothly over `windowMs`. */
export interface AttemptCounter {
  /** Counts one attempt and says whether it may go ahead. */
  hit(bucket: string): Promise<AttemptDecision>
  /** Gives back what a hit counted. */
  refund(bucket: string): Promise<void>
}

/**
 * Gives the counter of a policy. wiring.ts hands over the app's rate-limit stores (http/rate-limit-store.ts),
 * so that the counts are shared by every process when the app's limits are (REDIS_URL).
 */
export type AttemptCounters = (policy: { limit: number; windowMs: number }) => AttemptCounter

/**
 * Failed sign-ins: a burst of 10, then one every 90 s, per account and client address together; 30, then one
 * every 30 s, per address; and 100, then one every 36 s, per account (known or not) from every address. Only
 * failures count: each attempt takes its place in every bucket before its password is checked, so that attempts
 * at the same moment cannot overrun a limit, and gives it back if it succeeds or is refused. While a bucket is
 * empty every attempt in it is refused, before any password is checked. The
 * strict limit is the pair's, so that someone guessing from one address locks out that address, not the
 * owner; the account's own is loose, a bound on guesses spread over many addresses.
 */
const FAILED_SIGN_INS_PER_PAIR = { limit: 10, windowMs: 15 * 60_000 }
const FAILED_SIGN_INS_PER_ADDRESS = { limit: 30, windowMs: 15 * 60_000 }
const FAILED_SIGN_INS_PER_ACCOUNT = { limit: 100, windowMs: 60 * 60_000 }
/** How far back the password page shows failed sign-ins, and how many. */
const FAILED_SIGN_INS_SHOWN = { days: 30, count: 10 }
/** New accounts from one address (SIGNUP=open): a burst of 5, then one every 12 minutes. */
const SIGN_UPS = { limit: 5, windowMs: 60 * 60_000 }

/** A refusal for too many attempts, with the wait in whole seconds (at least 1). */
export interface Throttled {
  kind: 'throttled'
  retryAfterSeconds: number
}

/** A sign-in that worked gives the browser a token that makes it a known device of the account. */
export type SignIn = { kind: 'ok'; account: Account; device: DeviceToken } | { kind: 'wrong' } | Throttled

export type SignUp = { kind: 'created'; account: Account } | Throttled

/** The longest wait of the decisions that refuse, or undefined when every one allows. */
export function throttled(decisions: AttemptDecision[]): Throttled | undefined {
  if (decisions.every((decision) => decision.allowed)) return undefined
  const waitUs = Math.max(...decisions.map((decision) => decision.retryAfterUs))
  return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil(waitUs / 1_000_000)) }
}

/**
 * The OAuth grants an account gave applications (oauth/, which builds on accounts): what disabling an account
 * removes, with every token of them.
 */
export interface OauthGrants {
  deleteGrantsOf(accountId: string): Promise<void>
}

export class AccountsService {
  readonly #transaction: Transactor
  readonly #accounts: AccountsRepository
  readonly #keys: ApiKeysRepository
  readonly #sessions: SessionsRepository
  readonly #oauth: OauthGrants
  readonly #failuresByPair: AttemptCounter
  readonly #failuresByAccount: AttemptCounter
  readonly #failuresByAddress: AttemptCounter
  readonly #signUps: AttemptCounter
  readonly #devices: KnownDevices
  readonly #signUpPolicy: SignUpConfig
  readonly #audit: AuditLog
  readonly #throttledNotes = new ThrottledNotes()

  constructor(deps: {
    transaction: Transactor
    /** Where sign-ins, passwords and the changes of accounts are recorded, in the transaction of each. */
    audit: AuditLog
    accounts: AccountsRepository
    keys: ApiKeysRepository
    sessions: SessionsRepository
    oauth: OauthGrants
    attempts: AttemptCounters
    devices: KnownDevices
    /** Who may make themselves an account on the sign-up page (SIGNUP, SIGNUP_EMAIL_DOMAINS). */
    signUpPolicy: SignUpConfig
  }) {
    this.#transaction = deps.transaction
    this.#accounts = deps.accounts
    this.#keys = deps.keys
    this.#sessions = deps.sessions
    this.#oauth = deps.oauth
    this.#failuresByPair = deps.attempts(FAILED_SIGN_INS_PER_PAIR)
    this.#failuresByAccount = deps.attempts(FAILED_SIGN_INS_PER_ACCOUNT)
    this.#failuresByAddress = deps.attempts(FAILED_SIGN_INS_PER_ADDRESS)
    this.#signUps = deps.attempts(SIGN_UPS)
    this.#devices = deps.devices
    this.#signUpPolicy = deps.signUpPolicy
    this.#audit = deps.audit
  }

  /**
   * Creates an account, recorded with how (`how.via`). `how.admit` runs in the same transaction before the insert
   * and may refuse: the first-run setup uses it to take its link and to make sure no account exists yet, an
   * invitation to use itself up. Made by someone who becomes it (not the admin command), the entry names the new
   * account as its actor; one that signs in at once has its sign-in recorded with it. Left out, `how` is the admin
   * command's (which tests and benchmarks make their accounts with, through `wireAccounts`).
   */
  async create(
    input: { email: string; password?: string; role?: AccountRole },
    how: AccountCreation = { via: 'admin_command' },
  ): Promise<Account> {
    const email = normaliseEmail(input.email)
    if (input.password !== undefined) checkNewPassword(input.password)
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
    const now = Date.now()
    const account: Account = { id: newId('acc', now), email, createdAt: now, role: input.role ?? 'member' }
    const actor = how.via === 'admin_command' ? undefined : accountActor(account)
    await this.#transaction(async (trx) => {
      await how.admit?.(trx, account)
      // Thrown inside, so that what `admit` took (a setup link, an invitation) is given back.
      if (!(await this.#accounts.insert({ ...account, passwordHash }, trx))) {
        throw conflict(`An account with the email ${email} already exists.`, undefined, 'email')
      }
      await this.#audit.recordEach(trx, [
        {
          accountId: account.id,
          kind: 'account.created',
          details: { via: how.via, email, role: account.role, ...how.details },
          ...(actor ? { actor } : {}),
        },
        ...(how.signsIn
          ? [
              {
                accountId: account.id,
                kind: 'account.signed_in' as const,
                details: { method: how.via },
                actor: accountActor(account),
              },
            ]
          : []),
      ])
    })
    return account
  }

  /**
   * A new account made by the public (SIGNUP=open), limited per client address. `client` names the address
   * as the app's rate limits do (an IPv6 client's /64 counts as one address).
   */
  async signUp(input: { email: string; password: string; client: string }): Promise<SignUp> {
    const refusal = throttled([await this.#signUps.hit(`sign-up-${input.client}`)])
    if (refusal) return refusal
    assertSignUpAllowed(this.#signUpPolicy, normaliseEmail(input.email))
    return { kind: 'created', account: await this.create(input, { via: 'sign_up', signsIn: true }) }
  }

  /** Whether any account exists yet (none: the first-run setup is pending). */
  any(): Promise<boolean> {
    return this.#accounts.any()
  }

  /** Every account, newest first. */
  list(): Promise<Account[]> {
    return this.#accounts.list()
  }

  async findByEmail(email: string): Promise<Account | undefined> {
    const found = await this.#accounts.byEmail(normaliseEmail(email))
    return found && { id: found.id, email: found.email, createdAt: found.createdAt, role: found.role }
  }

  async getByEmail(email: string): Promise<Account> {
    const account = await this.findByEmail(email)
    if (!account) throw notFound(`Account ${email}`)
    return account
  }

  /**
   * The account, if the password matches and the account is not disabled; undefined otherwise. Every
   * refusal costs one scrypt, an unknown email included, so neither the answer nor its time tells whether
   * the account exists.
   */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    return (await this.#checkPassword(email, password)).account
  }

  /**
   * The account whose password it is, if it is; the enabled account the email names, either way; and the account
   * it names, disabled or not, for the audit log.
   */
  async #checkPassword(
    email: string,
    password: string,
  ): Promise<{ account?: Account; named?: string; found?: { id: string; disabled: boolean } }> {
    let normalised: string | undefined
    try {
      normalised = normaliseEmail(email)
    } catch {}
    const row = normalised === undefined ? undefined : await this.#accounts.byEmail(normalised)
    const found = row && { id: row.id, disabled: row.disabled }
    const named = row && !row.disabled ? row.id : undefined
    if (password.length > MAX_PASSWORD_LENGTH) return { named, found }
    const matches = await verifyPassword(password, row?.passwordHash ?? (await decoy()))
    if (!row?.passwordHash || !matches || row.disabled) return { named, found }
    return {
      account: { id: row.id, email: row.email, createdAt: row.createdAt, role: row.role },
      named,
      found,
    }
  }

  /**
   * A sign-in with a password, from the client address `client` (as the app's rate limits name it), by a browser
   * that may hold a known device's token (`device`). Failures are counted per account and address together, per
   * address, and per account; while a count is exhausted every attempt in it is refused before any password is
   * checked, and an unknown email is counted and answered as a wrong password is, so that the answers tell
   * nothing of who has an account. The account's own count, which guesses from many addresses use up, does not
   * apply to a browser the account signed in from before: strangers cannot lock the owner out.
   */
  async signIn(input: {
    email: string
    password: string
    client: string
    device?: string
    /** SSO_ONLY, and the email names no admin: no password signs in, whatever it is (`reason` in the log). */
    passwordOff?: boolean
  }): Promise<SignIn> {
    const email = input.email.trim().toLowerCase()
    const buckets: [AttemptCounter, string][] = [
      [this.#failuresByPair, `sign-in:${email}|${input.client}`],
      [this.#failuresByAddress, `sign-in-${input.client}`],
    ]
    if (!(await this.#isKnownDevice(input.device, email))) {
      buckets.push([this.#failuresByAccount, `sign-in:${email}`])
    }
    const taken = await Promise.all(
      buckets.map(async ([counter, bucket]) => ({ counter, bucket, decision: await counter.hit(bucket) })),
    )
    const giveBack = (places: typeof taken) =>
      Promise.all(places.map(({ counter, bucket }) => counter.refund(bucket)))
    const refusal = throttled(taken.map(({ decision }) => decision))
    if (refusal) {
      await giveBack(taken.filter(({ decision }) => decision.allowed))
      if (this.#throttledNotes.take(input.client)) {
        await this.noteFailedSignIn(await this.#enabledAccountOf(email), email, {
          method: 'password',
          reason: 'throttled',
        })
      }
      return refusal
    }
    const { account, named, found } = await this.#checkPassword(input.email, input.password)
    if (account) {
      await giveBack(taken)
      await this.noteSignIn(account, 'password')
      return { kind: 'ok', account, device: await this.#devices.issue(account.id) }
    }
    const reason = !found
      ? 'unknown_email'
      : found.disabled
        ? 'disabled'
        : input.passwordOff
          ? 'password_not_allowed'
          : 'wrong_password'
    await this.noteFailedSignIn(found?.id, email, { method: 'password', reason }, async (trx) => {
      if (named) await this.#accounts.recordFailedSignIn(named, { at: Date.now(), client: input.client }, trx)
    })
    return { kind: 'wrong' }
  }

  /** The enabled account of `email`, if there is one: whose throttled sign-in it was, for the audit log. */
  async #enabledAccountOf(email: string): Promise<string | undefined> {
    try {
      const found = await this.#accounts.byEmail(normaliseEmail(email))
      return found && !found.disabled ? found.id : undefined
    } catch {
      return undefined
    }
  }

  /**
   * Records a refused sign-in (by password, or single sign-on), with what else the refusal writes (`also`), in
   * one transaction. Tried by someone who proved nothing: a visitor. Without an account, the entry belongs to
   * none and says the address tried.
   */
  async noteFailedSignIn(
    accountId: string | undefined,
    email: string,
    details: { method: SignInMethod; reason: string },
    also?: (trx: Transaction) => Promise<void>,
  ): Promise<void> {
    await this.#transaction(async (trx) => {
      await also?.(trx)
      await this.#audit.record(trx, {
        accountId: accountId ?? null,
        kind: 'account.sign_in_failed',
        // The address someone tried is theirs to see only when it names no account (an admin reads it then), and
        // only when it is an address: people paste passwords into the email field, which must not be kept.
        details: accountId ? details : { ...details, ...triedAddress(email) },
        actor: VISITOR,
      })
    })
  }

  /** Whether the browser's token is a known device of the account of `email`. */
  async #isKnownDevice(token: string | undefined, email: string): Promise<boolean> {
    if (token === undefined) return false
    const accountId = await this.#devices.accountOf(token)
    if (accountId === undefined) return false
    let normalised: string
    try {
      normalised = normaliseEmail(email)
    } catch {
      return false
    }
    return (await this.#accounts.byEmail(normalised))?.id === accountId
  }

  /** A known device's token for a browser that has just signed in to the account another way (a new account). */
  rememberDevice(accountId: string): Promise<DeviceToken> {
    return this.#devices.issue(accountId)
  }

  /** The account's failed sign-ins of the last 30 days, the latest 10, newest first: for its owner to see. */
  failedSignIns(accountId: string): Promise<FailedSignIn[]> {
    const since = Date.now() - FAILED_SIGN_INS_SHOWN.days * 86_400_000
    return this.#accounts.failedSignIns(accountId, since, FAILED_SIGN_INS_SHOWN.count)
  }

  /** Forgets failed sign-ins older than the password page shows. */
  purgeFailedSignIns(): Promise<void> {
    return this.#accounts.deleteFailedSignInsBefore(Date.now() - FAILED_SIGN_INS_SHOWN.days * 86_400_000)
  }

  /** Sets the account's password, as the admin command does: recorded as a change of password. */
  async setPassword(accountId: string, password: string): Promise<void> {
    checkNewPassword(password)
    const hash = await hashPassword(password)
    await this.#transaction(async (trx) => {
      if (!(await this.#accounts.setPasswordHash(accountId, hash, trx))) throw notFound('Account')
      await this.#audit.record(trx, { accountId, kind: 'account.password_changed' })
    })
  }

  /**
   * Changes the password of a signed-in account, which must give its current one, and ends its other
   * sessions: whoever else knew the old password is signed out.
   */
  async changePassword(input: {
    accountId: string
    sessionId: string
    current: string
    next: string
  }): Promise<void> {
    const found = await this.#accounts.byId(input.accountId)
    if (!found) throw notFound('Account')
    if (
      !found.passwordHash ||
      input.current.length > MAX_PASSWORD_LENGTH ||
      !(await verifyPassword(input.current, found.passwordHash))
    ) {
      throw invalid('The current password is not right.', undefined, 'current')
    }
    await this.setPassword(input.accountId, input.next)
    await this.#sessions.deleteOfAccount(input.accountId, input.sessionId)
  }

  /**
   * Disables an account: it signs in no more, its sessions end, its API keys are revoked and its OAuth
   * grants (with their tokens) removed, so every credential it had is refused on its next request.
   */
  async disable(email: string): Promise<Account> {
    const account = await this.getByEmail(email)
    await this.#transaction(async (trx) => {
      await this.#keepAnAdmin(trx, account)
      // Disabling it again changes nothing, and is not an entry of the audit log.
      if ((await this.#accounts.setDisabled(account.id, Date.now(), trx)) === 'changed') {
        await this.#audit.record(trx, { accountId: account.id, kind: 'account.disabled' })
      }
    })
    await this.#endCredentials(account.id)
    return account
  }

  /**
   * Deletes an account, as an admin does: at once it is disabled, every credential it had ends, and it is marked;
   * then its files go through the trash's purge with their bytes, and its row, with everything else of it, once
   * they are gone (the expired-records job). The last admin that can sign in is not deleted.
   */
  async delete(email: string): Promise<Account> {
    const account = await this.getByEmail(email)
    await this.#transaction(async (trx) => {
      await this.#keepAnAdmin(trx, account)
      if (!(await this.#accounts.markDeleting(trx, account.id, Date.now()))) {
        throw conflict(`${account.email} is being deleted already.`)
      }
      await this.#audit.record(trx, {
        accountId: account.id,
        kind: 'account.deleted',
        details: { email: account.email },
      })
    })
    await this.#endCredentials(account.id)
    return account
  }

  /**
   * Removes the accounts an admin deleted whose files the trash's purge removed, with everything else of theirs;
   * answers how many went.
   */
  purgeDeleted(): Promise<number> {
    return this.#accounts.deleteEmptied()
  }

  /** Every credential of the account ends: its sessions, API keys and OAuth grants with their tokens. */
  async #endCredentials(accountId: string): Promise<void> {
    await this.#sessions.deleteOfAccount(accountId)
    await this.#keys.revokeAllOf(accountId)
    await this.#oauth.deleteGrantsOf(accountId)
  }

  /**
   * Records a sign-in on the web (by password, or by single sign-on), which the admin's list shows and the audit
   * log keeps: the account signed in is who acted, whoever the browser was before.
   */
  async noteSignIn(account: { id: string; email: string }, method: SignInMethod): Promise<void> {
    await this.#transaction(async (trx) => {
      await this.#accounts.recordSignIn(account.id, Date.now(), trx)
      await this.#audit.record(trx, {
        accountId: account.id,
        kind: 'account.signed_in',
        details: { method },
        actor: accountActor(account),
      })
    })
  }

  /** Makes the account an admin or a member; the last admin that is not disabled stays one. */
  async setRole(email: string, role: AccountRole): Promise<Account> {
    const account = await this.getByEmail(email)
    if (account.role === role) return account
    await this.#transaction(async (trx) => {
      if (role !== 'admin') await this.#keepAnAdmin(trx, account)
      await this.#accounts.setRole(trx, account.id, role)
      await this.#audit.record(trx, {
        accountId: account.id,
        kind: 'account.role_changed',
        details: { from: account.role, to: role },
      })
    })
    return { ...account, role }
  }

  /** Refuses a change that would leave the instance without an admin who can sign in: `account` is the last. */
  async #keepAnAdmin(trx: Executor, account: Account): Promise<void> {
    const admins = await this.#accounts.activeAdminIds(trx)
    if (admins.length === 1 && admins[0] === account.id) {
      throw conflict(
        `${account.email} is the last admin: an instance keeps one that can sign in.`,
        'Make another account an admin first.',
      )
    }
  }

  /** Lets a disabled account sign in again; its revoked credentials stay revoked. */
  async enable(email: string): Promise<Account> {
    const account = await this.getByEmail(email)
    await this.#transaction(async (trx) => {
      const enabled = await this.#accounts.setDisabled(account.id, null, trx)
      if (enabled === 'missing') throw conflict(`${account.email} is being deleted: it cannot be enabled.`)
      if (enabled === 'changed')
        await this.#audit.record(trx, { accountId: account.id, kind: 'account.enabled' })
    })
    return account
  }
}
