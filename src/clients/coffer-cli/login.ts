// `coffer login` and `coffer logout`. Signing in is the OAuth device flow (RFC 8628), as on a TV: the command
// registers itself with the server (dynamic registration, a public native client), asks for a code, tells the
// person where to enter it (and opens the browser when there is one), and waits for the tokens. `--with-key`
// takes an API key from stdin instead. Either is kept in the user's config directory (profiles.ts).
import { spawn } from 'node:child_process'
import { hostname } from 'node:os'
import * as oauth from 'oauth4webapi'
import { Coffer, CofferError } from '../sdk/index.ts'
import type { Output } from './output.ts'
import { UsageError } from './output.ts'
import type { Profile, Profiles } from './profiles.ts'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** Plain HTTP only when the server's own address is (a server on this machine or a private network). */
const httpOptions = (url: string) => ({ [oauth.allowInsecureRequests]: url.startsWith('http:') })

export async function loginWithKey(
  profiles: Profiles,
  out: Output,
  options: { url: string; name: string; key: string },
): Promise<void> {
  const key = options.key.trim()
  if (!key)
    throw new UsageError('No API key on stdin.', 'Pipe the key in: coffer login URL --with-key < key.txt')
  const coffer = new Coffer({ url: options.url, credentials: { apiKey: key } })
  // A key that the server refuses is not kept. Any operation proves it; the list of folders needs least.
  await coffer.folders.page({ limit: 1 }).catch((error: unknown) => {
    // A key without folders:read is still a key.
    if (error instanceof CofferError && error.code === 'insufficient_scope') return
    throw error
  })
  await profiles.save(options.name, { url: options.url, apiKey: key })
  out.line(`Signed in to ${options.url} with an API key (saved as "${options.name}").`)
  out.result({ server: options.url, name: options.name, credential: 'api_key' })
}

/**
 * The server's authorization metadata, and this command registered with it as a public native client of the
 * device flow (dynamic registration), with every scope the server has to ask for.
 */
async function registerDeviceClient(url: string) {
  const http = httpOptions(url)
  const issuer = new URL(url)
  const as = await oauth
    .discoveryRequest(issuer, { algorithm: 'oauth2', ...http })
    .then((response) => oauth.processDiscoveryResponse(issuer, response))
    .catch((error: unknown) => {
      throw new CofferError(
        0,
        'network_error',
        `${url} does not answer as a Coffer server: ${(error as Error).message}`,
        'Check the address.',
      )
    })
  const scopes = (await new Coffer({ url }).capabilities()).scopes.map((s) => s.name)
  const client = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: `Coffer command line (${hostname()})`,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: [DEVICE_GRANT, 'refresh_token'],
        response_types: [],
        redirect_uris: [],
      },
      http,
    ),
  )
  return { as, client, scopes }
}

export async function loginWithDevice(
  profiles: Profiles,
  out: Output,
  options: { url: string; name: string; openBrowser: boolean; signal: AbortSignal },
): Promise<void> {
  const { url } = options
  const http = httpOptions(url)
  const { as, client, scopes } = await registerDeviceClient(url)
  const device = await oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(
      as,
      client,
      oauth.None(),
      { scope: scopes.join(' '), resource: `${url}/api/v1` },
      http,
    ),
  )
  const link = device.verification_uri_complete ?? device.verification_uri
  out.note(
    device.verification_uri_complete
      ? `To sign in, open this link (the code is filled in):\n  ${device.verification_uri_complete}\nor open ${device.verification_uri}\nand enter the code:  ${device.user_code}\n`
      : `To sign in, open ${device.verification_uri}\nand enter the code:  ${device.user_code}\n`,
  )
  if (options.openBrowser && openInBrowser(link)) out.note('(Your browser has been opened.)')
  // The code can be entered again, by this link or by hand, until it expires (a page closed before Allow).
  out.note(`Waiting for you to approve (the code works for ${minutes(device.expires_in)})…`)

  let interval = (device.interval ?? 5) * 1000
  const deadline = Date.now() + device.expires_in * 1000
  for (;;) {
    await wait(interval, options.signal)
    try {
      const tokens = await oauth.processDeviceCodeResponse(
        as,
        client,
        await oauth.deviceCodeGrantRequest(as, client, oauth.None(), device.device_code, http),
      )
      const profile: Profile = {
        url,
        oauth: {
          clientId: client.client_id,
          tokens: {
            accessToken: tokens.access_token,
            ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
            ...(tokens.expires_in ? { expiresAt: Date.now() + tokens.expires_in * 1000 } : {}),
          },
        },
      }
      await profiles.save(options.name, profile)
      out.line(`Signed in to ${url} (saved as "${options.name}").`)
      out.result({
        server: url,
        name: options.name,
        credential: 'oauth',
        scopes: tokens.scope?.split(' ') ?? [],
      })
      return
    } catch (error) {
      if (!(error instanceof oauth.ResponseBodyError)) throw error
      if (error.error === 'authorization_pending') {
        if (Date.now() > deadline) break
        continue
      }
      if (error.error === 'slow_down') {
        interval += 5000
        continue
      }
      if (error.error === 'access_denied') {
        throw new CofferError(
          401,
          'access_denied',
          'The sign-in was denied in the browser.',
          'Run `coffer login` again to retry.',
        )
      }
      if (error.error === 'expired_token') break
      throw new CofferError(
        401,
        error.error,
        error.error_description ?? error.error,
        'Run `coffer login` again.',
      )
    }
  }
  throw new CofferError(
    401,
    'expired_token',
    'The code expired before it was approved.',
    'Run `coffer login` again.',
  )
}

/** Revokes the tokens (the server forgets the grant) and forgets the profile. */
export async function logout(profiles: Profiles, out: Output, name: string | undefined): Promise<void> {
  const found = await profiles.get(name)
  if (!found)
    throw new UsageError(`No server is saved${name ? ` as "${name}"` : ''}.`, 'See `coffer login --help`.')
  const { profile } = found
  if (profile.oauth) {
    const http = httpOptions(profile.url)
    const issuer = new URL(profile.url)
    try {
      const as = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }),
      )
      const client = { client_id: profile.oauth.clientId }
      // Revoking the refresh token ends the grant, and with it every access token of it.
      const token = profile.oauth.tokens.refreshToken ?? profile.oauth.tokens.accessToken
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, client, oauth.None(), token, http),
      )
    } catch (error) {
      out.note(
        `Could not revoke the token at ${profile.url} (${(error as Error).message}); forgetting it here.`,
      )
    }
  }
  await profiles.remove(found.name)
  out.line(
    profile.apiKey
      ? `Signed out of ${profile.url}. The API key still works until you revoke it on the server's API keys page.`
      : `Signed out of ${profile.url}.`,
  )
  out.result({ server: profile.url, name: found.name, signedOut: true })
}

/** Opens `url` in the person's browser when there is one to open; whether it tried. */
function openInBrowser(url: string): boolean {
  const command =
    process.platform === 'darwin'
      ? 'open'
      : process.platform === 'win32'
        ? 'explorer'
        : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
          ? 'xdg-open'
          : undefined
  if (!command) return false
  const child = spawn(command, [url], { stdio: 'ignore', detached: true })
  child.on('error', () => {})
  child.unref()
  return true
}

function minutes(seconds: number): string {
  const whole = Math.max(1, Math.round(seconds / 60))
  return whole === 1 ? '1 minute' : `${whole} minutes`
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(new CofferError(0, 'aborted', 'Cancelled.', ''))
      },
      { once: true },
    )
  })
}
