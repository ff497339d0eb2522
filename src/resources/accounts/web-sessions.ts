// The signed-in browser of the account and OAuth pages: the session cookie, read once per request by the
// `load` hook, and set or cleared at sign-in and sign-out. The cookie holds the session's secret
// (its row holds the hash); it is `HttpOnly`, `SameSite=Lax`, and `Secure` with the `__Host-` prefix when
// PUBLIC_URL is https (the prefix needs Secure, so plain-http installs use a plain name).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { actAs } from '../../platform/audit/audit-log.ts'
import { AppError } from '../../platform/errors.ts'
import type { AppNav } from '../../platform/web/layout.ts'
import type { Account } from './accounts.repository.ts'
import { accountActor } from './accounts.service.ts'
import type { DeviceToken } from './known-devices.ts'
import type { Session, SessionsService } from './sessions.service.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in session, once `WebSessions.load` ran; undefined for a signed-out browser. */
    webSession: Session | undefined
  }
}

/** The session cookie's name: `__Host-` needs `Secure`, so only an https PUBLIC_URL gets it. */
export function sessionCookieName(publicUrl: string): string {
  return publicUrl.startsWith('https:') ? '__Host-coffer_session' : 'coffer_session'
}

/** What a CSRF token is bound to: the session, or the signed-out browser (app.ts registers the plugin). */
export const csrfUserInfo = (request: FastifyRequest): string => request.webSession?.id ?? 'signed-out'

/** A form's CSRF token, bound to the browser's current session. */
export const csrfToken = (request: FastifyRequest, reply: FastifyReply): string =>
  reply.generateCsrf({ userInfo: csrfUserInfo(request) })

/** The account of a request that passed `requireSession`. */
export function sessionAccountId(request: FastifyRequest): string {
  const session = request.webSession
  if (!session) throw new Error('sessionAccountId needs a signed-in request: add requireSession to the route')
  return session.account.id
}

/** The navigation of a page of the signed-in owner (`requireSession` ran), `current` marked. */
export function appNav(request: FastifyRequest, reply: FastifyReply, current?: AppNav['current']): AppNav {
  const session = request.webSession
  if (!session) throw new Error('appNav needs a signed-in request: add requireSession to the route')
  // Read with the session (its one query); none for a session begun in this request (a sign-in, a redirect).
  const { usage } = session.account
  return {
    email: session.account.email,
    csrfToken: csrfToken(request, reply),
    current,
    admin: session.account.role === 'admin',
    failedWebhooks: session.failedWebhooks,
    ...(usage ? { usage } : {}),
  }
}

/** Where a signed-out browser is sent, with `return_to` naming where it wanted to go. */
export const SIGN_IN_PATH = '/account/sign-in'

/** A path on this server to go back to after signing in: never another origin, never a scheme. */
export function safeReturnTo(value: unknown, fallback: string): string {
  return typeof value === 'string' && value.length <= 2048 && /^\/(?![/\\])[\x21-\x7e]*$/.test(value)
    ? value
    : fallback
}

/**
 * Whether a signed-out request comes from a page's script rather than from a person: a call that asks for JSON,
 * or a POST that does not ask for a page. A GET that asks for anything else (a browser's `text/html`, or any type
 * as curl and link checkers ask) is someone opening the address, who is sent to sign in.
 */
function isScriptCall(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? ''
  if (/\btext\/html\b/.test(accept)) return false
  if (/\bapplication\/json\b/.test(accept)) return true
  return request.method !== 'GET' && request.method !== 'HEAD'
}

export class WebSessions {
  readonly #app: FastifyInstance
  readonly #sessions: SessionsService
  readonly #secure: boolean
  readonly cookieName: string
  readonly deviceCookieName: string

  constructor(app: FastifyInstance, sessions: SessionsService, publicUrl: string) {
    this.#app = app
    this.#sessions = sessions
    this.#secure = publicUrl.startsWith('https:')
    this.cookieName = sessionCookieName(publicUrl)
    this.deviceCookieName = this.#secure ? '__Secure-coffer_device' : 'coffer_device'
  }

  /** A route hook: parses the cookies (the app parses none by default) and resumes the session. */
  readonly load = async (request: FastifyRequest): Promise<void> => {
    request.cookies = this.#app.parseCookie(request.headers.cookie ?? '')
    request.webSession = await this.#sessions.resume(request.cookies[this.cookieName])
    // What a signed-in browser does, its account does (platform/audit).
    if (request.webSession) actAs(accountActor(request.webSession.account))
  }

  /**
   * The hook of the pages and calls that need a signed-in browser, run as `preValidation` so that a signed-out
   * request learns that first, before any of its parameters are judged: resumes the session, and without one
   * sends a page request to sign in (coming back to the page asked for; after a form, whose page the browser
   * does not name under our Referrer-Policy, to the home page) and refuses a script's call with a 401 in the API's envelope, which the script shows as a message.
   */
  readonly requireSession = async (
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply | undefined> => {
    await this.load(request)
    if (request.webSession) return undefined
    if (isScriptCall(request)) {
      throw new AppError('unauthorized', 'You are signed out.', 'Sign in again, then retry.')
    }
    const query =
      request.method === 'GET' || request.method === 'HEAD'
        ? `?return_to=${encodeURIComponent(request.url)}`
        : ''
    return reply.redirect(`${SIGN_IN_PATH}${query}`, 303)
  }

  /** Starts a new session for the account: any session the browser had ends (no fixation). */
  async signIn(request: FastifyRequest, reply: FastifyReply, account: Account): Promise<void> {
    if (request.webSession) await this.#sessions.end(request.webSession.id)
    const { session, secret, maxAgeMs } = await this.#sessions.start(account)
    reply.setCookie(this.cookieName, secret, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: this.#secure,
      maxAge: Math.floor(maxAgeMs / 1000),
    })
    request.webSession = session
    actAs(accountActor(account))
  }

  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.webSession) await this.#sessions.end(request.webSession.id)
    this.clear(reply)
    request.webSession = undefined
  }

  /** The known device's token this browser holds (accounts/known-devices.ts), after `load`. */
  deviceOf(request: FastifyRequest): string | undefined {
    return request.cookies?.[this.deviceCookieName]
  }

  /**
   * Keeps the token that makes this browser a known device of the account it signed in to, for sign-ins only
   * (it names an account, so it goes nowhere else).
   */
  rememberDevice(reply: FastifyReply, device: DeviceToken): void {
    reply.setCookie(this.deviceCookieName, device.token, {
      path: SIGN_IN_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: this.#secure,
      maxAge: device.maxAgeSeconds,
    })
  }

  clear(reply: FastifyReply): void {
    reply.clearCookie(this.cookieName, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.#secure })
  }
}
