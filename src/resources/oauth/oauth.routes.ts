// The authorization server over HTTP:
// - oidc-provider's endpoints (authorize, token, revoke, register, device), handed the raw request with its
//   body unread, and its metadata at /.well-known/oauth-authorization-server (RFC 8414), the same document
//   as /.well-known/openid-configuration.
// - /oauth/interaction/{uid}: the sign-in (Coffer's own session: a browser without one goes to the sign-in
//   page and comes back) and the consent page, where the user grants all or some of the scopes asked for;
//   its form is read through a TypeBox schema, like every page's.
// - /.well-known/oauth-protected-resource/api/v1 and …/mcp: the API's and the MCP server's protected resource
//   metadata (RFC 9728).
// Dynamic registration is rate limited per client address.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { ALL_SCOPES, type Scope } from '../../platform/auth/scopes.ts'
import { hashSecret } from '../../platform/auth/secrets.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { addressBucket, retryAfterSeconds } from '../../platform/http/rate-limit.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import {
  MCP_RESOURCE_METADATA_PATH,
  OAUTH_METADATA_PATH,
  PROTECTED_RESOURCE_METADATA_PATH,
} from '../../platform/public-urls.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, type FormState } from '../../platform/web/forms.ts'
import type { Page } from '../../platform/web/layout.ts'
import type { Web } from '../../platform/web/web.ts'
import { csrfToken, SIGN_IN_PATH } from '../accounts/web-sessions.ts'
import {
  type AuthorizationServer,
  OAUTH_PATHS,
  type ProviderContext,
  type ProviderPages,
} from './authorization-server.ts'
import { displayedClientName, displayedClientText } from './client-metadata.ts'
import type { ConnectedAppsService } from './connected-apps.service.ts'
import { confirmCodePage, consentPage, deviceDonePage, userCodePage } from './oauth-pages.views.ts'

/** Registrations from one address: a burst of 20, then one every 3 minutes. */
const REGISTRATIONS = { limit: 20, windowMs: 60 * 60_000 }

/**
 * Codes entered on the device page, right or wrong, per client address and per browser session of the
 * provider: a burst of 10, then one every 90 s. A person types a code or two; at that rate a guesser gets
 * about a thousand tries a day from an address, against the 25,600,000,000 codes of oidc-provider's
 * alphabet, each alive 10 minutes.
 */
const DEVICE_CODE_ATTEMPTS = { limit: 10, windowMs: 15 * 60_000 }

/** The consent form: the scopes ticked (none ticked sends none, which is asked again). */
const readConsent = formReader(
  Type.Object(
    {
      scopes: Type.Optional(
        Type.Array(Type.Enum(ALL_SCOPES), {
          maxItems: ALL_SCOPES.length,
          uniqueItems: true,
          errorMessage: 'Choose from the scopes listed.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
)

/** The provider's endpoints, each answered by the provider itself. */
const PROVIDER_PATHS = [
  OAUTH_PATHS.authorization,
  // Where the provider resumes an authorization once its interaction is finished.
  `${OAUTH_PATHS.authorization}/*`,
  OAUTH_PATHS.token,
  OAUTH_PATHS.revocation,
  OAUTH_PATHS.registration,
  OAUTH_PATHS.device_authorization,
  OAUTH_PATHS.code_verification,
  `${OAUTH_PATHS.code_verification}/*`,
  OAUTH_PATHS.jwks,
  '/.well-known/openid-configuration',
]

export const oauthRoutes: Routes = async (app, deps) => {
  const { web, urls } = deps
  const provider = await deps.services.authorizationServer(providerPages(web))
  const handle = providerCallback(app, provider, web)
  await app.register(async (raw: FastifyInstance) => providerEndpointRoutes(raw, { provider, handle, web }))
  resourceMetadataRoutes(app, urls)
  // Sign-in and consent.
  await app.register(async (pagesApp: FastifyInstance) => {
    await acceptForms(pagesApp)
    const kit = interactionKit(pagesApp, deps, provider)
    for (const routes of [signInRoutes, consentRoutes]) routes(pagesApp, kit)
  })
}

/** The provider's device flow and error pages, drawn in Coffer's layout. */
function providerPages(web: Web): ProviderPages {
  return {
    userCodeInput: (ctx, xsrf, error) =>
      render(
        web,
        ctx,
        userCodePage({ action: OAUTH_PATHS.code_verification, xsrf, error }),
        error ? 400 : 200,
      ),
    userCodeConfirm: (ctx, xsrf, clientName, userCode) =>
      render(
        web,
        ctx,
        confirmCodePage({ action: OAUTH_PATHS.code_verification, xsrf, clientName, userCode }),
      ),
    deviceSuccess: (ctx, clientName) => render(web, ctx, deviceDonePage(clientName)),
    error: (ctx, out) => {
      const status = Math.max(ctx.status, 400)
      render(
        web,
        ctx,
        {
          title: 'This sign-in cannot go on · Coffer',
          main: web.notice({
            title: 'This sign-in cannot go on',
            message: `${(out.error_description ?? out.error).replace(/\.?$/, '.')} Start again from the application.`,
            status,
          }),
        },
        status,
      )
    },
  }
}

/** A page of ours, answered through the provider's own response (its device flow pages). */
function render(web: Web, ctx: ProviderContext, page: Page, status = 200): void {
  ctx.status = status
  ctx.set(web.pageHeaders)
  ctx.body = web.layout.render(page)
}

type ProviderHandler = ReturnType<AuthorizationServer['callback']>

/** The provider as a Node request handler, its answers given the pages' security headers and its errors logged. */
function providerCallback(app: RouteApp, provider: AuthorizationServer, web: Web): ProviderHandler {
  // Every error of the provider goes to the JSON log, by its route (a path may hold an interaction's uid): its
  // server errors, which it answers with an error page, and anything that escapes it, which Koa would print to
  // stderr, stack and all. Listening to 'error' before `callback()` replaces Koa's printing.
  const logError = (error: unknown, ctx: unknown) =>
    app.log.error(
      { err: error, route: (ctx as { oidc?: { route?: string } } | undefined)?.oidc?.route },
      'the authorization server failed',
    )
  // The pages' security headers on every answer of the provider, set first: its own pages (the device flow's
  // form that submits itself) and its JSON get them, and the hash of that form's inline script is added to
  // this CSP by the provider itself. Our pages (`render`) set them again.
  const { 'content-type': _html, ...securityHeaders } = web.pageHeaders
  provider.use(async (ctx, next) => {
    ctx.set(securityHeaders)
    await next()
  })
  provider.on('server_error', (ctx, error) => logError(error, ctx))
  // Koa's own event, which the provider's typings leave out.
  ;(provider as unknown as NodeJS.EventEmitter).on('error', (error: unknown, ctx: unknown) =>
    logError(error, ctx),
  )
  return provider.callback()
}

/**
 * The provider's endpoints and its metadata, each answered by the provider itself; registrations and codes
 * entered on the device page are counted first.
 */
function providerEndpointRoutes(
  raw: FastifyInstance,
  { provider, handle, web }: { provider: AuthorizationServer; handle: ProviderHandler; web: Web },
): void {
  // The provider reads its own bodies: they reach it unread.
  raw.removeAllContentTypeParsers()
  raw.addContentTypeParser('*', (_request, _payload, done) => done(null))
  const registrations = raw.rateLimitStore(REGISTRATIONS)
  const admitDeviceCode = deviceCodeGate(raw, provider, web)
  const pass = (request: FastifyRequest, reply: FastifyReply) => {
    reply.hijack()
    handle(request.raw, reply.raw)
  }
  for (const url of PROVIDER_PATHS) {
    raw.route({
      method: ['GET', 'POST', 'OPTIONS'],
      url,
      schema: { hide: true },
      handler: async (request, reply) => {
        if (url === OAUTH_PATHS.registration && request.method === 'POST') {
          const hit = await registrations.hit(`oauth-register-${addressBucket(clientAddress(request))}`)
          if (!hit.allowed) {
            return reply
              .status(429)
              .header('retry-after', retryAfterSeconds(hit.retryAfterUs))
              .send({ error: 'rate_limited', error_description: 'Too many registrations; retry later.' })
          }
        }
        if (url === OAUTH_PATHS.code_verification && request.method === 'POST') {
          if (!(await admitDeviceCode(request, reply))) return reply
        }
        pass(request, reply)
      },
    })
  }
  raw.get(OAUTH_METADATA_PATH, { schema: { hide: true } }, async (request, reply) => {
    request.raw.url = '/.well-known/openid-configuration'
    pass(request, reply)
  })
}

/** Counts a code entered on the device page; false (and the page said) once either limit is reached. */
function deviceCodeGate(app: FastifyInstance, provider: AuthorizationServer, web: Web) {
  const deviceCodeAttempts = app.rateLimitStore(DEVICE_CODE_ATTEMPTS)
  const sessionCookieName = provider.cookieName('session')
  return async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    const session = app.parseCookie(request.headers.cookie ?? '')[sessionCookieName]
    const buckets = [`device-code-${addressBucket(clientAddress(request))}`]
    if (session) buckets.push(`device-code-session-${hashSecret(session)}`)
    const decisions = await Promise.all(buckets.map((bucket) => deviceCodeAttempts.hit(bucket)))
    if (decisions.every((decision) => decision.allowed)) return true
    const wait = retryAfterSeconds(Math.max(...decisions.map((decision) => decision.retryAfterUs)))
    reply.header('retry-after', wait)
    web.sendError(reply, 429, {
      title: 'Too many codes tried',
      message: `Too many codes were entered here. Try again in ${Math.ceil(wait / 60)} minute${wait > 60 ? 's' : ''}, with the code your device shows.`,
    })
    return false
  }
}

/**
 * The protected resource metadata (RFC 9728) of the API and of the MCP server: the same authorization server
 * and scopes, each its own resource (a token is for one of them).
 */
function resourceMetadataRoutes(app: RouteApp, urls: PublicUrls): void {
  const resourceMetadata = (path: string, resource: string, name: string) =>
    app.get(path, { schema: { hide: true } }, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').send({
        resource,
        authorization_servers: [urls.issuer],
        scopes_supported: ALL_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: name,
        resource_documentation: urls.docs,
      }),
    )
  resourceMetadata(PROTECTED_RESOURCE_METADATA_PATH, urls.apiBase, 'Coffer API')
  resourceMetadata(MCP_RESOURCE_METADATA_PATH, urls.mcp, 'Coffer MCP server')
}

type InteractionDetails = Awaited<ReturnType<AuthorizationServer['interactionDetails']>>
type UidParams = { Params: { uid: string } }

/** What the sign-in and consent routes share: the provider, the option presets. */
function interactionKit(
  pagesApp: FastifyInstance,
  { web, urls, webSessions, services }: RouteDeps,
  provider: AuthorizationServer,
) {
  const page = { page: true } as const
  // A signed-out browser is sent to sign in, and comes back to the interaction.
  const signedIn = { config: page, schema: { hide: true }, preValidation: webSessions.requireSession }
  const posted = {
    config: page,
    schema: { hide: true },
    preValidation: [webSessions.requireSession, pagesApp.csrfProtection],
  }
  return { provider, web, urls, signedIn, posted, connectedApps: services.connectedApps }
}

type InteractionKit = ReturnType<typeof interactionKit>

/** The interaction's page: the provider's sign-in (Coffer's session), then the consent page. */
function signInRoutes(pagesApp: FastifyInstance, kit: InteractionKit): void {
  pagesApp.get<UidParams>(`${OAUTH_PATHS.interaction}/:uid`, kit.signedIn, async (request, reply) => {
    const details = await interaction(kit, request, reply)
    if (!details) return reply
    const session = request.webSession
    if (!session) throw new Error('requireSession let a signed-out browser through')
    if (details.prompt.name === 'login') {
      return finish(kit, request, reply, { login: { accountId: session.account.id } })
    }
    if (details.session?.accountId !== session.account.id) {
      // Signed in as someone else since the request began: sign-in again, as the current account.
      return finish(kit, request, reply, { login: { accountId: session.account.id } })
    }
    return showConsent(kit, request, reply, details)
  })
}

/** The consent form's answers: the scopes allowed, or the request denied. */
function consentRoutes(pagesApp: FastifyInstance, kit: InteractionKit): void {
  const { provider, urls, posted, connectedApps } = kit
  pagesApp.post<UidParams>(`${OAUTH_PATHS.interaction}/:uid/consent`, posted, async (request, reply) => {
    const details = await interaction(kit, request, reply)
    if (!details) return reply
    const session = request.webSession
    if (!session || details.session?.accountId !== session.account.id) {
      return signInFirst(reply, request.params.uid)
    }
    const form = readConsent(request.body)
    if (!form.ok) return showConsent(kit, request, reply, details, 400, form)
    const requested = requestedScopes(details)
    const ticked = new Set(form.value.scopes ?? [])
    const granted = requested.filter((scope) => ticked.has(scope))
    if (granted.length === 0) {
      return showConsent(kit, request, reply, details, 400, {
        values: { scopes: '' },
        errors: { scopes: 'Allow at least one, or deny the request.' },
      })
    }
    // Granted for the resource asked for (the API, unless the MCP server).
    const resource = details.params.resource === urls.mcp ? urls.mcp : urls.apiBase
    const grantId = await replaceGrant(provider, connectedApps, details, session.account.id, resource, {
      requested,
      granted,
    })
    return finish(kit, request, reply, { consent: { grantId } })
  })

  pagesApp.post<UidParams>(`${OAUTH_PATHS.interaction}/:uid/deny`, posted, async (request, reply) => {
    const details = await interaction(kit, request, reply)
    if (!details) return reply
    return finish(kit, request, reply, {
      error: 'access_denied',
      error_description: 'The user denied the request.',
    })
  })
}

/**
 * A new grant holds exactly what was ticked now: one the application held before is replaced (its tokens end
 * with it), so that unticking a scope granted earlier takes it away; saved and recorded together
 * (connected apps). Returns the new grant's id.
 */
async function replaceGrant(
  provider: AuthorizationServer,
  connectedApps: ConnectedAppsService,
  details: InteractionDetails,
  accountId: string,
  resource: string,
  { requested, granted }: { requested: Scope[]; granted: Scope[] },
): Promise<string> {
  const { Grant } = provider
  const clientId = String(details.params.client_id)
  const grant = new Grant({ accountId, clientId })
  // The same names are also the provider's own scopes (so that a client's registration may name them), and
  // are granted or refused there alike.
  grant.addResourceScope(resource, granted.join(' '))
  grant.addOIDCScope(granted.join(' '))
  const refused = requested.filter((scope) => !granted.includes(scope))
  if (refused.length > 0) {
    grant.rejectResourceScope(resource, refused.join(' '))
    grant.rejectOIDCScope(refused.join(' '))
  }
  return connectedApps.grant({
    accountId,
    clientId,
    scopes: granted,
    replaces: details.grantId,
    save: () => grant.save(),
  })
}

/** The interaction of the request, or its error page (expired, or from another browser). */
async function interaction(
  { provider, web }: InteractionKit,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<InteractionDetails | undefined> {
  try {
    return await provider.interactionDetails(request.raw, reply.raw)
  } catch {
    web.sendError(reply, 400, EXPIRED)
    return undefined
  }
}

function finish(
  { provider }: InteractionKit,
  request: FastifyRequest,
  reply: FastifyReply,
  result: Parameters<AuthorizationServer['interactionFinished']>[2],
) {
  reply.hijack()
  return provider.interactionFinished(request.raw, reply.raw, result, { mergeWithLastSubmission: true })
}

/** Signed in as someone else since the consent page was shown: sign in again, then back here. */
function signInFirst(reply: FastifyReply, uid: string) {
  const back = `${OAUTH_PATHS.interaction}/${uid}`
  return reply.redirect(`${SIGN_IN_PATH}?return_to=${encodeURIComponent(back)}`, 303)
}

/** The API scopes asked for, known ones only, in the catalogue's order. */
function requestedScopes(details: InteractionDetails): Scope[] {
  const asked = new Set(String(details.params.scope ?? '').split(' '))
  return ALL_SCOPES.filter((scope) => asked.has(scope))
}

async function showConsent(
  { provider, web }: InteractionKit,
  request: FastifyRequest<UidParams>,
  reply: FastifyReply,
  details: InteractionDetails,
  status = 200,
  form: FormState = {},
) {
  const client = await provider.Client.find(String(details.params.client_id))
  if (!client) return web.sendError(reply, 400, EXPIRED)
  // The redirect URI was checked against the client's registration before the interaction began; the
  // device flow has none.
  const redirect =
    typeof details.params.redirect_uri === 'string' ? new URL(details.params.redirect_uri) : undefined
  const redirectHost = redirect && (redirect.host || redirect.protocol)
  const formTarget = redirect && (redirect.host ? redirect.origin : redirect.protocol)
  const action = `${OAUTH_PATHS.interaction}/${request.params.uid}`
  return web.send(
    reply,
    status,
    consentPage({
      csrfToken: csrfToken(request, reply),
      email: request.webSession?.account.email ?? '',
      client: {
        name: displayedClientName(client.clientId, client.clientName),
        uri: typeof client.clientUri === 'string' ? displayedClientText(client.clientUri) : undefined,
      },
      redirectHost,
      scopes: requestedScopes(details),
      action: `${action}/consent`,
      denyAction: `${action}/deny`,
      form,
    }),
    { formTarget },
  )
}

const EXPIRED = {
  title: 'This sign-in request expired',
  message: 'Go back to the application and start again.',
}
