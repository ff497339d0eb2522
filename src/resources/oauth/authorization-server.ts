// The OAuth 2 authorization server: oidc-provider (certified, maintained), configured for what Coffer needs
// and nothing more. Authorization code with PKCE S256 for every client, refresh tokens rotated on every use
// (a replayed one revokes its grant), revocation (RFC 7009), dynamic registration of public clients (RFC 7591),
// the device authorization grant (RFC 8628), and resource indicators (RFC 8707): every access token is for the
// API base address, and only for it. Tokens are opaque and short-lived; the API looks them up in the database
// (access-tokens.service.ts), so a revoked grant stops working at once. Its state lives in `oauth_records`
// (oauth-records.repository.ts, through the adapter below). Its pages (device code, errors) are rendered in
// Coffer's layout by the functions `pages` gives; the sign-in and consent are Coffer's own (oauth.routes.ts).
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import Provider, {
  type Adapter,
  type AdapterPayload,
  type Configuration,
  type ErrorOut,
  errors,
  interactionPolicy,
  type KoaContextWithOIDC,
} from 'oidc-provider'
import { auditContext } from '../../platform/audit/audit-log.ts'
import { ALL_SCOPES } from '../../platform/auth/scopes.ts'
import type { AccountsRepository } from '../accounts/accounts.repository.ts'
import type { SessionsService } from '../accounts/sessions.service.ts'
import {
  CHECKED_CLIENT_METADATA,
  checkClientMetadata,
  displayedClientName,
  displayedClientText,
} from './client-metadata.ts'
import type { OauthPayload, OauthRecordsRepository } from './oauth-records.repository.ts'

/** Where each endpoint is served; all of them under /oauth. */
export const OAUTH_PATHS = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  revocation: '/oauth/revoke',
  registration: '/oauth/register',
  device_authorization: '/oauth/device/auth',
  code_verification: '/oauth/device',
  jwks: '/oauth/jwks',
  interaction: '/oauth/interaction',
} as const

export const ACCESS_TOKEN_TTL_SECONDS = 10 * 60

export type AuthorizationServer = Provider

/** What the provider's own pages look like: functions of the page module (oauth.routes.ts). */
export interface ProviderPages {
  userCodeInput(ctx: ProviderContext, xsrf: string, error: string | undefined): void
  userCodeConfirm(ctx: ProviderContext, xsrf: string, clientName: string, userCode: string): void
  deviceSuccess(ctx: ProviderContext, clientName: string): void
  error(ctx: ProviderContext, out: { error: string; error_description?: string }): void
}

export type ProviderContext = Parameters<NonNullable<Provider['app']['middleware'][number]>>[0]

export interface AuthorizationServerDeps {
  /** The origin of PUBLIC_URL: the issuer. */
  issuer: string
  /**
   * The resources tokens are for (RFC 8707), each its own audience: PUBLIC_URL + /api/v1 (the API, the
   * default), and PUBLIC_URL + /mcp (the MCP server).
   */
  resources: { api: string; mcp: string }
  records: OauthRecordsRepository
  accounts: AccountsRepository
  sessions: SessionsService
  /**
   * Ends the grants the provider ends, as connected apps record them: a client revoked its refresh token, or one
   * of a grant's codes or refresh tokens was used twice.
   */
  grantEnds: GrantEnds
  /** The web session cookie's name (accounts/web-sessions.ts). */
  sessionCookie: string
  /** Secrets kept in the database, shared by every process: cookie keys and the signing key. */
  secret(name: string, generate: () => string): Promise<string>
  pages: ProviderPages
  /** Whether a proxy in front may say the request's scheme and host (Koa's `proxy`). */
  trustProxy: boolean
}

/**
 * A device code as the code form finds it. The provider marks a code `inFlight` once its person continues past
 * the form, and refuses it afterwards as used; a person who left before allowing or denying (closed the tab,
 * lost the sign-in page) could never enter it again while their device went on waiting. A code neither approved
 * nor refused can be entered again until it expires: the provider's own resume still refuses a code that has
 * its account or an error, so of two pages left open on one code only the first decision counts.
 */
function resumable(payload: OauthPayload | undefined): AdapterPayload | undefined {
  if (!payload?.inFlight || payload.accountId || payload.error) return payload as AdapterPayload | undefined
  const { inFlight: _abandoned, ...rest } = payload
  return rest as AdapterPayload
}

/** How the grants the provider ends end (ConnectedAppsService), each recorded in the audit log. */
export interface GrantEnds {
  revokedByClient(grantId: string): Promise<void>
  revokedOnReplay(grantId: string): Promise<void>
}

/**
 * The requests (by their audit context, one object per request) in which the provider ends a grant because one of
 * its codes or refresh tokens was used twice. The provider ends a grant the same way whatever the reason (its
 * revocation helper, then the Grant adapter's `destroy`), asking `revokeGrantPolicy` first with the request: the
 * token endpoint ends one only for a replay, the revocation endpoint for a client's revocation.
 */
const replaysInFlight = new WeakSet<object>()

/** The provider's rule (an access token revoked leaves its grant), noting the grants ended on a replay. */
async function revokeGrantPolicy(ctx: KoaContextWithOIDC): Promise<boolean> {
  if (ctx.oidc.route === 'revocation') return !ctx.oidc.entities.AccessToken
  const request = auditContext()
  if (ctx.oidc.route === 'token' && request) replaysInFlight.add(request)
  return true
}

/**
 * One adapter per model, over the one table. A grant the provider destroys ends through `grantEnds`, which
 * records it: revoked by its client, or ended on a replay (`replaysInFlight`).
 */
function adapterFor(records: OauthRecordsRepository, grantEnds: GrantEnds) {
  const endGrant = (grantId: string) => {
    const request = auditContext()
    return request && replaysInFlight.has(request)
      ? grantEnds.revokedOnReplay(grantId)
      : grantEnds.revokedByClient(grantId)
  }
  return (model: string): Adapter => ({
    upsert: (id, payload, expiresIn) => records.upsert(model, id, payload as OauthPayload, expiresIn),
    find: async (id) => (await records.find(model, id)) as AdapterPayload | undefined,
    findByUid: async (uid) => (await records.findByUid(model, uid)) as AdapterPayload | undefined,
    findByUserCode: async (userCode) => resumable(await records.findByUserCode(model, userCode)),
    destroy: (id) => (model === 'Grant' ? endGrant(id) : records.destroy(model, id)),
    revokeByGrantId: (grantId) => records.revokeByGrantId(model, grantId),
    // A conditional update: of two redemptions of one code (or refresh token) at once, one succeeds and
    // the other finds it used, which revokes the whole grant, as a replay must.
    consume: async (id) => {
      const { consumed, grantId } = await records.consume(model, id)
      if (consumed) return
      if (grantId) await grantEnds.revokedOnReplay(grantId)
      throw new errors.InvalidGrant(`${model === 'RefreshToken' ? 'refresh token' : 'grant'} already used`)
    },
  })
}

const FORM_XSRF = /name="xsrf" value="([^"]*)"/

const SESSION_TTL_SECONDS = 24 * 60 * 60

/** How long each of the provider's records lives, in seconds. */
const TTL = {
  AccessToken: ACCESS_TOKEN_TTL_SECONDS,
  AuthorizationCode: 60,
  DeviceCode: 10 * 60,
  Interaction: 60 * 60,
  Session: SESSION_TTL_SECONDS,
  Grant: 365 * 24 * 60 * 60,
  RefreshToken: 30 * 24 * 60 * 60,
  IdToken: 60 * 60,
}

/**
 * After an error on the device pages, oidc-provider (9.13) shows the code form again with a new xsrf secret in
 * its session, after its session middleware has already passed over a session it had just made and nobody had
 * touched: that session, touched now but never saved, then fails its `persist` (a 500 and a stack trace, for a
 * browser without the provider's session cookie). It is saved here, with its cookie, as that middleware saves
 * a new session, so that the form shown again works.
 */
async function keepNewSession(ctx: ProviderContext, cookie: Record<string, unknown>): Promise<void> {
  const session = ctx.oidc.session
  if (!session || typeof session.exp === 'number') return
  ctx.oidc.cookies.set(ctx.oidc.provider.cookieName('session'), session.id, cookie)
  await session.save(SESSION_TTL_SECONDS)
}

export async function createAuthorizationServer(deps: AuthorizationServerDeps): Promise<Provider> {
  const provider = new Provider(deps.issuer, await providerConfiguration(deps))
  provider.proxy = deps.trustProxy
  useIssuerOrigin(provider, deps.issuer)
  listApiScopes(provider)
  return provider
}

/** The provider's whole configuration: its secrets read (or made) first. */
async function providerConfiguration(deps: AuthorizationServerDeps): Promise<Configuration> {
  const { cookieKey, jwk } = await providerSecrets(deps)
  // Secure when PUBLIC_URL is https, as Coffer's own cookies are, whether or not the request came through a
  // trusted proxy that said so.
  const secure = new URL(deps.issuer).protocol === 'https:'
  const cookie = { signed: true, httpOnly: true, sameSite: 'lax', secure } as const
  return {
    adapter: adapterFor(deps.records, deps.grantEnds),
    jwks: { keys: [{ ...jwk, use: 'sig', alg: 'RS256', kid: 'coffer-1' }] },
    cookies: { keys: [cookieKey], long: cookie, short: cookie },
    routes: {
      authorization: OAUTH_PATHS.authorization,
      token: OAUTH_PATHS.token,
      revocation: OAUTH_PATHS.revocation,
      registration: OAUTH_PATHS.registration,
      device_authorization: OAUTH_PATHS.device_authorization,
      code_verification: OAUTH_PATHS.code_verification,
      jwks: OAUTH_PATHS.jwks,
    },
    // Scopes are the API's (the resource server's, below); RFC 8414 metadata lists them.
    discovery: { service_documentation: `${deps.issuer}/docs` },
    // The API's scopes, also as the provider's own: a client's registration may then limit itself to some.
    scopes: [...ALL_SCOPES],
    responseTypes: ['code'],
    clientAuthMethods: ['none'],
    // Registered names and addresses are shown to people; redirects go where a browser is sent.
    extraClientMetadata: {
      properties: CHECKED_CLIENT_METADATA,
      validator: (_ctx, key, value, metadata) => checkClientMetadata(key, value, metadata),
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    pkce: { required: () => true },
    findAccount: async (_ctx, sub) => {
      const account = await deps.accounts.byId(sub)
      if (!account || account.disabled) return undefined
      return { accountId: sub, claims: () => ({ sub }) }
    },
    interactions: {
      policy: loginPolicy(deps),
      url: (_ctx, interaction) => `${OAUTH_PATHS.interaction}/${interaction.uid}`,
    },
    // Every client may refresh; with the API's scopes only (no `offline_access` needed).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    revokeGrantPolicy,
    expiresWithSession: async () => false,
    ttl: TTL,
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      userinfo: { enabled: false },
      // A client revokes only its own tokens.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      registration: { enabled: true, issueRegistrationAccessToken: false },
      deviceFlow: deviceFlow(deps.pages, cookie),
      resourceIndicators: resourceIndicators(deps.resources),
    },
    renderError: async (ctx, out) => deps.pages.error(ctx, out),
  }
}

/** The cookie key, and the signing key: made by the first process, kept in the database, shared by all. */
async function providerSecrets(deps: AuthorizationServerDeps) {
  const cookieKey = await deps.secret('oauth-cookie-key', () => randomBytes(32).toString('base64url'))
  // oidc-provider wants a signing key even though Coffer issues no ID token and no JWT: one RSA key, made by
  // the first process and shared by all.
  const jwk = JSON.parse(
    await deps.secret('oauth-signing-key', () =>
      JSON.stringify(
        generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
      ),
    ),
  )
  return { cookieKey, jwk }
}

/**
 * Signing in is Coffer's: the login prompt also asks again when the browser has no Coffer session for the
 * account the provider remembers, so signing out of Coffer signs out of the authorization server too.
 */
function loginPolicy(deps: AuthorizationServerDeps) {
  const policy = interactionPolicy.base()
  const login = policy.get('login')
  login?.checks.add(
    new interactionPolicy.Check('coffer_session', 'sign in to Coffer is required', async (ctx) => {
      const secret = ctx.cookies.get(deps.sessionCookie, { signed: false })
      const session = await deps.sessions.resume(secret)
      return session?.account.id === ctx.oidc.session?.accountId
        ? interactionPolicy.Check.NO_NEED_TO_PROMPT
        : interactionPolicy.Check.REQUEST_PROMPT
    }),
  )
  return policy
}

type Features = NonNullable<Configuration['features']>

/** The device authorization grant (RFC 8628), its pages drawn by `pages`. */
function deviceFlow(pages: ProviderPages, cookie: Record<string, unknown>): Features['deviceFlow'] {
  return {
    enabled: true,
    userCodeInputSource: async (ctx, form, out, error) => {
      if (error) await keepNewSession(ctx, cookie)
      pages.userCodeInput(
        ctx,
        FORM_XSRF.exec(form)?.[1] ?? '',
        error ? codeErrorMessage(error, out) : undefined,
      )
    },
    userCodeConfirmSource: async (ctx, form, client, _deviceInfo, userCode) => {
      pages.userCodeConfirm(
        ctx,
        FORM_XSRF.exec(form)?.[1] ?? '',
        displayedClientName(client.clientId, client.clientName),
        userCode,
      )
    },
    successSource: async (ctx) => {
      pages.deviceSuccess(ctx, displayedClientText(ctx.oidc.client?.clientName ?? 'the application'))
    },
  }
}

/** What the code form says after the provider refused what it was sent. */
function codeErrorMessage(error: errors.OIDCProviderError | Error, out: ErrorOut | undefined): string {
  if ('userCode' in error || error.name === 'NoCodeError') {
    return 'That code is not right, or it expired. Check the code your device shows.'
  }
  if (error.name === 'AbortedError') return 'The sign-in was cancelled.'
  // The form's xsrf was not that of this browser's session (none, or another).
  if (out?.error === 'invalid_request' && /xsrf|form details/.test(out.error_description ?? '')) {
    return 'This form has expired. Enter the code your device shows again.'
  }
  return 'Something went wrong. Start again from your device.'
}

/** Resource indicators (RFC 8707): every token is for the API (the default) or the MCP server, never both. */
function resourceIndicators(resources: AuthorizationServerDeps['resources']): Features['resourceIndicators'] {
  return {
    enabled: true,
    defaultResource: async () => resources.api,
    useGrantedResource: async () => true,
    getResourceServerInfo: async (_ctx, resource) => {
      if (resource !== resources.api && resource !== resources.mcp) {
        throw new errors.InvalidTarget(`the resources are ${resources.api} and ${resources.mcp}`)
      }
      return {
        scope: ALL_SCOPES.join(' '),
        audience: resource,
        accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
        accessTokenFormat: 'opaque',
      }
    },
  }
}

/**
 * The provider builds its URLs (the metadata's endpoints, redirects to its pages) from the request's origin,
 * which a proxy may not pass on whole (nginx's `$host` drops the port): PUBLIC_URL is the origin, as for every
 * URL Coffer hands out. It also makes Koa see every request as https when PUBLIC_URL is (Koa refuses to set
 * a Secure cookie otherwise), whether or not the request came through a trusted proxy that said so.
 */
function useIssuerOrigin(provider: Provider, issuer: string): void {
  const origin = new URL(issuer)
  provider.use(async (ctx, next) => {
    Object.defineProperties(ctx.request, {
      origin: { value: origin.origin },
      protocol: { value: origin.protocol.slice(0, -1) },
      host: { value: origin.host },
      hostname: { value: origin.hostname },
    })
    await next()
  })
}

/** The metadata lists the scopes of the API, the one resource, rather than the library's OpenID scopes. */
function listApiScopes(provider: Provider): void {
  provider.use(async (ctx, next) => {
    await next()
    if (ctx.path === '/.well-known/openid-configuration' && ctx.status === 200) {
      ;(ctx.body as { scopes_supported: string[] }).scopes_supported = [...ALL_SCOPES]
    }
  })
}
