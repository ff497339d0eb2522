// An OAuth client as a third-party application is: oauth4webapi, discovering the server from its metadata,
// registering itself, and sending the browser (Chromium, signing in and consenting as a person does) through
// the authorization code flow with PKCE and the API as its resource.
import assert from 'node:assert/strict'
import * as oauth from 'oauth4webapi'
import type { Page } from 'playwright-core'
import type { Scope } from '../../src/platform/auth/scopes.ts'

/** Plain http on 127.0.0.1 in tests; the library asks for https otherwise. */
export const INSECURE = { [oauth.allowInsecureRequests]: true } as const

/** Where the test client says it wants the browser back: a loopback port no one listens on (the browser's request is intercepted). */
export const REDIRECT_URI = 'http://127.0.0.1:47893/callback'

export interface OauthClient {
  as: oauth.AuthorizationServer
  client: oauth.Client
  resource: string
}

export async function discover(base: string): Promise<oauth.AuthorizationServer> {
  const response = await oauth.discoveryRequest(new URL(base), { algorithm: 'oauth2', ...INSECURE })
  return oauth.processDiscoveryResponse(new URL(base), response)
}

/** Registers a native public client, as a command-line tool or an MCP host does. */
export async function register(
  base: string,
  metadata: Partial<oauth.OmitSymbolProperties<oauth.Client>> = {},
): Promise<OauthClient> {
  const as = await discover(base)
  const response = await oauth.dynamicClientRegistrationRequest(
    as,
    {
      client_name: 'Coffer test CLI',
      application_type: 'native',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      ...metadata,
    },
    INSECURE,
  )
  const client = await oauth.processDynamicClientRegistrationResponse(response)
  return { as, client, resource: `${base}/api/v1` }
}

export interface Authorization {
  url: URL
  verifier: string
  state: string
}

/** An authorization request with PKCE S256 and the API as resource; `extra` may override any parameter. */
export async function authorizationUrl(
  { as, client, resource }: OauthClient,
  scopes: Scope[],
  extra: Record<string, string | null> = {},
): Promise<Authorization> {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint as string)
  const params: Record<string, string | null> = {
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: scopes.join(' '),
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource,
    ...extra,
  }
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value)
  return { url, verifier, state }
}

/**
 * Opens the authorization URL in the page and follows it to the redirect back to the client, which is caught:
 * `act` signs in and consents on the way (or not). Resolves with the URL the browser was sent back to.
 */
export async function followInBrowser(
  page: Page,
  url: URL,
  act: (page: Page) => Promise<void>,
): Promise<URL> {
  let resolveBack: (url: URL) => void = () => {}
  const back = new Promise<URL>((resolve) => {
    resolveBack = resolve
  })
  await page.route(`${REDIRECT_URI}**`, async (route) => {
    resolveBack(new URL(route.request().url()))
    await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' })
  })
  try {
    await page.goto(url.href)
    await act(page)
    return await back
  } finally {
    await page.unroute(`${REDIRECT_URI}**`)
  }
}

/** Signs in on the sign-in page, if the browser is sent there. */
export async function signInIfAsked(page: Page, email: string, password: string): Promise<void> {
  if (!new URL(page.url()).pathname.startsWith('/account/sign-in')) return
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/** On the consent page: unticks every scope not in `grant`, then allows. */
export async function consent(page: Page, grant: Scope[]): Promise<void> {
  await page.waitForURL(/\/oauth\/interaction\//)
  for (const box of await page.locator('input[name="scopes"]').all()) {
    const scope = (await box.getAttribute('value')) as Scope
    if (!grant.includes(scope)) await box.uncheck()
  }
  await page.getByRole('button', { name: 'Allow' }).click()
}

/** Exchanges the code the browser came back with for tokens. */
export async function exchange(
  oc: OauthClient,
  authorization: Authorization,
  back: URL,
): Promise<oauth.TokenEndpointResponse> {
  const params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
  const response = await oauth.authorizationCodeGrantRequest(
    oc.as,
    oc.client,
    oauth.None(),
    params,
    REDIRECT_URI,
    authorization.verifier,
    { ...INSECURE, additionalParameters: { resource: oc.resource } },
  )
  return oauth.processAuthorizationCodeResponse(oc.as, oc.client, response)
}

/** A token endpoint's refusal: its OAuth error code. */
export async function tokenError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return error.error
    throw error
  }
  assert.fail('the token endpoint accepted the request')
}

export async function apiStatus(base: string, token: string, path = '/files'): Promise<number> {
  const response = await fetch(`${base}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } })
  await response.arrayBuffer()
  return response.status
}
