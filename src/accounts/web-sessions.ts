// The signed-in browser of the account and OAuth pages: the session cookie, read once per request by the
// `load` pre-handler, and set or cleared at sign-in and sign-out. The cookie holds the session's secret
// (its row holds the hash); it is `HttpOnly`, `SameSite=Lax`, and `Secure` with the `__Host-` prefix when
// PUBLIC_URL is https (the prefix needs Secure, so plain-http installs use a plain name).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Account } from './accounts.repository.ts'
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

/** A path on this server to go back to after signing in: never another origin, never a scheme. */
export function safeReturnTo(value: unknown, fallback: string): string {
  return typeof value === 'string' && value.length <= 2048 && /^\/(?![/\\])[\x21-\x7e]*$/.test(value)
    ? value
    : fallback
}

export class WebSessions {
  readonly #app: FastifyInstance
  readonly #sessions: SessionsService
  readonly #secure: boolean
  readonly cookieName: string

  constructor(app: FastifyInstance, sessions: SessionsService, publicUrl: string) {
    this.#app = app
    this.#sessions = sessions
    this.#secure = publicUrl.startsWith('https:')
    this.cookieName = sessionCookieName(publicUrl)
  }

  /** Pre-handler: parses the cookies (the app parses none by default) and resumes the session. */
  readonly load = async (request: FastifyRequest): Promise<void> => {
    request.cookies = this.#app.parseCookie(request.headers.cookie ?? '')
    request.webSession = await this.#sessions.resume(request.cookies[this.cookieName])
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
  }

  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.webSession) await this.#sessions.end(request.webSession.id)
    this.clear(reply)
    request.webSession = undefined
  }

  clear(reply: FastifyReply): void {
    reply.clearCookie(this.cookieName, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.#secure })
  }
}
