// A real OpenID Connect provider for the single sign-on tests: oidc-provider (the library Coffer's own
// authorization server is built on) on its own 127.0.0.1 port, with one confidential client registered for
// Coffer's callback and users whose claims the test sets (email, email_verified). Its login and consent are
// done for the person: whoever `signInAs` names is signed in at the provider's interaction, and the scopes
// asked for are granted, so a browser or a plain HTTP client follows redirects straight back to Coffer.
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import Provider from 'oidc-provider'
import { freePort } from './ports.ts'

export interface ProviderUser {
  email?: string
  email_verified?: boolean
}

export interface TestProvider {
  issuer: string
  clientId: string
  clientSecret: string
  /** The env a Coffer server needs to use this provider, with its button named `name`. */
  env(name?: string): Record<string, string>
  /** Adds (or changes) a user at the provider; returns its subject. */
  addUser(user: ProviderUser, sub?: string): string
  /** The user the next logins at the provider are, by subject; `refuse`: the person cancels there. */
  signInAs(sub: string | 'refuse'): void
  /** Stops listening (the provider is down); `start` listens again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
}

/** A provider whose client sends the browser back to `callback` (Coffer's /account/sso/callback). */
export async function startTestProvider(callback: string): Promise<TestProvider> {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const clientId = 'coffer-test'
  const clientSecret = randomBytes(24).toString('base64url')
  const users = new Map<string, ProviderUser>()
  let next: string | undefined
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' })
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [callback],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...jwk, use: 'sig', alg: 'RS256', kid: 'test-1' }] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx, sub) => {
      const user = users.get(sub)
      if (!user) return undefined
      return {
        accountId: sub,
        claims: async () => ({ sub, email: user.email, email_verified: user.email_verified }),
      }
    },
  })
  const handler = provider.callback()
  const interaction = async (req: Parameters<typeof handler>[0], res: Parameters<typeof handler>[1]) => {
    const details = await provider.interactionDetails(req, res)
    if (details.prompt.name === 'login') {
      if (next === undefined) throw new Error('the test named no user to sign in as (signInAs)')
      if (next === 'refuse') {
        const refusal = { error: 'access_denied', error_description: 'The person cancelled.' }
        await provider.interactionFinished(req, res, refusal, { mergeWithLastSubmission: false })
        return
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: next } },
        { mergeWithLastSubmission: false },
      )
      return
    }
    const accountId = details.session?.accountId
    const clientId = String(details.params.client_id)
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId })
    if (!grant) throw new Error('the interaction names a grant that is gone')
    grant.addOIDCScope('openid email')
    const grantId = await grant.save()
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true })
  }
  let server: Server | undefined
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const listening = createServer((req, res) => {
        if (req.url?.startsWith('/interaction/')) {
          interaction(req, res).catch((error: unknown) => {
            res.statusCode = 500
            res.end(String(error))
          })
          return
        }
        void handler(req, res)
      })
      listening.once('error', reject)
      listening.listen(port, '127.0.0.1', () => {
        server = listening
        resolve()
      })
    })
  await start()
  return {
    issuer,
    clientId,
    clientSecret,
    env: (name = 'Test ID') => ({
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: clientId,
      OIDC_CLIENT_SECRET: clientSecret,
      OIDC_NAME: name,
    }),
    addUser(user, sub = `user-${randomBytes(6).toString('hex')}`) {
      users.set(sub, user)
      return sub
    },
    signInAs(sub) {
      next = sub
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        if (!server) return resolve()
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
        server = undefined
      }),
    start,
  }
}
