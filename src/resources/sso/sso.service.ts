// Single sign-on with an external OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET), with
// openid-client: the authorization code flow with PKCE (S256), `state` and `nonce`, the provider found by
// discovery from its issuer, and the ID token checked by the library (its signature by the provider's keys, its
// issuer, audience, expiry and nonce). A login names an account by the provider's verified email
// (`email_verified` true): an existing account that is not disabled signs in; an unknown address gets a new
// account, a member, only as the sign-up policy allows (signUpRefusal, the rule the sign-up page follows too).
// The provider's subject (`sub`, its lasting name for the person) is kept with the account at the first sign-in
// (sso_identities): from then on the subject finds the account, so a person whose email changed at the provider
// keeps theirs, and an address the provider gave to someone else (another subject) does not open it.
// Every other outcome is a refusal with its reason, which the pages put in plain words. No secret (the client
// secret, a code, a token, the state) leaves this file but to the provider.
import * as oidc from 'openid-client'
import type { OidcConfig, SignUpConfig } from '../../platform/config.ts'
import { AppError } from '../../platform/errors.ts'
import type { Account, AccountsRepository } from '../accounts/accounts.repository.ts'
import type { AccountsService } from '../accounts/accounts.service.ts'
import { signUpRefusal } from '../accounts/sign-up-policy.ts'
import type { SsoFlow, SsoFlows } from './sso-flow.ts'
import type { SsoIdentitiesRepository } from './sso-identities.repository.ts'

/** How long a request to the provider may take before it counts as unreachable. */
const PROVIDER_TIMEOUT_SECONDS = 10

/** Why a sign-in with the provider signed no one in; each has its page (sso.views.ts). */
export type SsoRefusal =
  /** The provider cannot be reached, or answered with a fault of its own (a 5xx, not its protocol's answer). */
  | { kind: 'unreachable' }
  /** No sign-in in progress in this browser: its flow cookie is missing, expired or changed, or `state` differs. */
  | { kind: 'state' }
  /** The provider refused the code: used already (a replay), expired, or not this client's. */
  | { kind: 'code' }
  /** The provider sent back an error instead of a code (the person cancelled, or it refused them). */
  | { kind: 'denied' }
  /** The provider's answer failed the checks (the ID token's signature, issuer, audience, expiry or nonce). */
  | { kind: 'invalid' }
  /** The provider gave no email address, or one it has not verified. */
  | { kind: 'unverified' }
  /** No account has this address, and the sign-up policy makes none: the policy's own words. */
  | { kind: 'sign-up'; email: string; reason: string }
  /** The account of this address is disabled. */
  | { kind: 'disabled' }
  /** The account of this address signed in with another identity at the provider (the address passed on). */
  | { kind: 'other-identity'; email: string }

export type SsoResult =
  | { kind: 'signed-in'; account: Account; created: boolean; returnTo: string }
  | { kind: 'refused'; refusal: SsoRefusal }

/** What `start` throws when the provider cannot be reached. */
export class ProviderUnreachable extends Error {
  constructor() {
    super('The identity provider cannot be reached.')
  }
}

export class SsoService {
  readonly #oidc: OidcConfig
  readonly #signUpPolicy: SignUpConfig
  readonly #redirectUri: string
  readonly #flows: SsoFlows
  readonly #accounts: AccountsService
  readonly #accountsRepository: AccountsRepository
  readonly #identities: SsoIdentitiesRepository
  /** The provider's configuration from the last discovery that worked (its keys are cached on it). */
  #configuration: oidc.Configuration | undefined

  constructor(deps: {
    oidc: OidcConfig
    signUpPolicy: SignUpConfig
    /** The callback's absolute address, the one registered at the provider. */
    redirectUri: string
    flows: SsoFlows
    accounts: AccountsService
    /** To tell a disabled account (AccountsService's lookups leave that out). */
    accountsRepository: AccountsRepository
    identities: SsoIdentitiesRepository
  }) {
    this.#oidc = deps.oidc
    this.#signUpPolicy = deps.signUpPolicy
    this.#redirectUri = deps.redirectUri
    this.#flows = deps.flows
    this.#accounts = deps.accounts
    this.#accountsRepository = deps.accountsRepository
    this.#identities = deps.identities
  }

  /** The provider's name, for the button and the pages. */
  get name(): string {
    return this.#oidc.name
  }

  /** SSO_ONLY: the sign-in page offers the provider only; admins keep a password (the break-glass). */
  get only(): boolean {
    return this.#oidc.only
  }

  /**
   * A new sign-in: the provider's address to send the browser to, and the sealed flow for its cookie. The
   * provider is discovered again each time, so that one that is down is found here, before the person is sent
   * to it. Throws ProviderUnreachable.
   */
  async start(returnTo: string): Promise<{ url: string; sealedFlow: string }> {
    const configuration = await this.#discover()
    const flow: SsoFlow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      codeVerifier: oidc.randomPKCECodeVerifier(),
      returnTo,
    }
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.#redirectUri,
      scope: 'openid email',
      response_type: 'code',
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: 'S256',
    })
    return { url: url.href, sealedFlow: await this.#flows.seal(flow) }
  }

  /**
   * The provider's answer at the callback: `search` is the callback's query string (`?code=…&state=…`),
   * `sealedFlow` the flow's cookie. Redeems the code with the verifier, checks the ID token, then signs the
   * account in, makes one, or refuses.
   */
  async finish(search: string, sealedFlow: string | undefined): Promise<SsoResult> {
    const refused = (refusal: SsoRefusal): SsoResult => ({ kind: 'refused', refusal })
    const flow = await this.#flows.open(sealedFlow)
    if (!flow) return refused({ kind: 'state' })
    const params = new URLSearchParams(search)
    // Before anything else, and before the provider is asked: an answer to another browser's sign-in (or to none)
    // is no one's sign-in here. This is what stops a login CSRF (an attacker's own code sent to a victim).
    if (params.get('state') !== flow.state) return refused({ kind: 'state' })
    const current = new URL(this.#redirectUri)
    current.search = params.toString()

    let claims: Record<string, unknown>
    let subject: string
    try {
      const configuration = this.#configuration ?? (await this.#discover())
      const tokens = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      })
      const idToken = tokens.claims()
      if (!idToken) return refused({ kind: 'invalid' })
      claims = { ...idToken }
      subject = idToken.sub
      // Many providers put the email in the ID token; others (oidc-provider by default) only at userinfo.
      if (typeof idToken.email !== 'string' || idToken.email_verified === undefined) {
        claims = await oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub)
      }
    } catch (error) {
      return refused(refusalOf(error))
    }

    if (!isVerified(claims.email_verified) || typeof claims.email !== 'string') {
      return refused({ kind: 'unverified' })
    }
    // As accounts are stored (AccountsService's normaliseEmail); one that is no address matches no account, and
    // `create` refuses it.
    return this.#signIn(claims.email.trim().toLowerCase(), subject, flow.returnTo)
  }

  /**
   * The account of the provider's `subject` if it signed in before, else of the verified `email` (made as the
   * sign-up policy allows), signed in and linked to the subject.
   */
  async #signIn(email: string, subject: string, returnTo: string): Promise<SsoResult> {
    const issuer = this.#oidc.issuer
    const refused = (refusal: SsoRefusal): SsoResult => ({ kind: 'refused', refusal })
    // A refusal of a known account is in its audit log (one of no account, the sign-up policy's, is not).
    const refusedTo = async (accountId: string, refusal: SsoRefusal): Promise<SsoResult> => {
      const reason = refusal.kind === 'disabled' ? 'disabled' : 'other_identity'
      await this.#accounts.noteFailedSignIn(accountId, email, { method: 'sso', reason })
      return refused(refusal)
    }
    let created = false
    const linked = await this.#identities.accountOf(issuer, subject)
    let found = linked === undefined ? undefined : await this.#accountsRepository.byId(linked)
    if (!found) {
      found = await this.#accountsRepository.byEmail(email)
      if (!found) {
        const reason = signUpRefusal(this.#signUpPolicy, email)
        if (reason) return refused({ kind: 'sign-up', email, reason })
        try {
          await this.#accounts.create({ email, role: 'member' }, { via: 'sso' })
          created = true
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          // Not an email address at all: nothing to match or make an account with.
          if (error.code === 'invalid_request') return refused({ kind: 'unverified' })
          // Made at the same moment by another sign-in of the same person: theirs is the account.
          if (error.code !== 'conflict') throw error
        }
        found = await this.#accountsRepository.byEmail(email)
        if (!found) throw new Error('an account made by single sign-on cannot be read back')
      }
      if (found.disabled) return refusedTo(found.id, { kind: 'disabled' })
      const known = await this.#identities.subjectOf(found.id, issuer)
      if (known !== undefined && known !== subject)
        return refusedTo(found.id, { kind: 'other-identity', email })
      await this.#identities.link(issuer, subject, found.id, Date.now())
      // Two first sign-ins at once, of two subjects with one address: the link kept decides.
      if ((await this.#identities.accountOf(issuer, subject)) !== found.id) {
        return refusedTo(found.id, { kind: 'other-identity', email })
      }
    }
    if (found.disabled) return refusedTo(found.id, { kind: 'disabled' })
    await this.#accounts.noteSignIn(found, 'sso')
    const account: Account = {
      id: found.id,
      email: found.email,
      createdAt: found.createdAt,
      role: found.role,
    }
    return { kind: 'signed-in', account, created, returnTo }
  }

  async #discover(): Promise<oidc.Configuration> {
    let configuration: oidc.Configuration
    try {
      configuration = await oidc.discovery(
        new URL(this.#oidc.issuer),
        this.#oidc.clientId,
        { redirect_uris: [this.#redirectUri] },
        oidc.ClientSecretBasic(this.#oidc.clientSecret),
        {
          timeout: PROVIDER_TIMEOUT_SECONDS,
          // An http issuer is the operator's choice (OIDC_ISSUER on a LAN, or in tests): allowed as given.
          execute: this.#oidc.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
        },
      )
    } catch {
      // Whatever went wrong (refused, timed out, not a provider's metadata, another issuer), no sign-in can start.
      throw new ProviderUnreachable()
    }
    this.#configuration = configuration
    return configuration
  }
}

/** `email_verified` as providers send it: a boolean, or (AWS Cognito, some others) the string "true". */
function isVerified(value: unknown): boolean {
  return value === true || value === 'true'
}

/** What a failure of the code's redemption, or of the checks of what it gave, means to the person. */
function refusalOf(error: unknown): SsoRefusal {
  if (error instanceof ProviderUnreachable) return { kind: 'unreachable' }
  if (error instanceof oidc.AuthorizationResponseError) return { kind: 'denied' }
  if (error instanceof oidc.ResponseBodyError) {
    return error.status >= 500 ? { kind: 'unreachable' } : { kind: 'code' }
  }
  if (isNetworkFault(error)) return { kind: 'unreachable' }
  if (error instanceof oidc.ClientError) {
    // An answer that is no protocol's (a proxy's 502 page, say) is the provider being down; the rest failed a check.
    const cause = (error as { cause?: unknown }).cause
    if (
      (error.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || error.code === 'OAUTH_RESPONSE_IS_NOT_JSON') &&
      cause instanceof Response &&
      cause.status >= 500
    ) {
      return { kind: 'unreachable' }
    }
    return { kind: 'invalid' }
  }
  throw error
}

/** A refused connection, a lost one, a name that does not resolve, or a timeout: fetch's TypeError, or an abort. */
function isNetworkFault(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 4; depth++) {
    if (cause instanceof TypeError && cause.message === 'fetch failed') return true
    if (cause.name === 'TimeoutError' || cause.name === 'AbortError') return true
    cause = (cause as { cause?: unknown }).cause
  }
  return false
}
