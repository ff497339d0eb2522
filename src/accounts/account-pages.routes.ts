// The account pages, for people in a browser (views in account-pages.views.ts):
// - /account/setup/{secret}: the first account, from the one-time link the server printed at start.
// - /account/sign-in, /account/sign-up (SIGNUP=open only), /account/sign-out, /account/sign-out-everywhere.
// - /account/keys (create, list, revoke API keys), /account/apps (connected OAuth applications; revoke),
//   /account/password (change it; other sessions end).
// Every POST checks its form's CSRF token (@fastify/csrf-protection, bound to the session); every answer is a
// page, so a refusal is shown next to its field. After a successful POST the browser is redirected (303), so
// a reload never sends a form twice; the one exception is a new API key, whose secret is shown once, in the
// answer to the POST itself.
import formBody from '@fastify/formbody'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { isScope, type Scope } from '../auth/scopes.ts'
import { AppError } from '../errors.ts'
import { addressBucket, retryAfterSeconds } from '../http/rate-limit.ts'
import { parseFormStrictly } from '../http/strict-text.ts'
import type { Routes } from '../routes.ts'
import {
  ACCOUNT_PATHS,
  appsPage,
  type FormState,
  keysPage,
  passwordPage,
  setupPage,
  signInPage,
  signUpPage,
} from './account-pages.views.ts'
import type { Account } from './accounts.repository.ts'
import { normaliseEmail } from './accounts.service.ts'
import { csrfToken, safeReturnTo, WebSessions } from './web-sessions.ts'

/**
 * Failed sign-ins: a burst of 10, then one every 90 s, per account (known or not) and per client address
 * (30, then one every 30 s). Only failures count; while either bucket is empty every attempt is refused,
 * before any password is checked.
 */
const FAILED_SIGN_INS_PER_ACCOUNT = { limit: 10, windowMs: 15 * 60_000 }
const FAILED_SIGN_INS_PER_ADDRESS = { limit: 30, windowMs: 15 * 60_000 }
/** New accounts from one address (SIGNUP=open): a burst of 5, then one every 12 minutes. */
const SIGN_UPS = { limit: 5, windowMs: 60 * 60_000 }

type Form = Record<string, string | string[] | undefined>

const text = (form: Form | undefined, name: string): string => {
  const value = form?.[name]
  return typeof value === 'string' ? value : ''
}

const list = (form: Form | undefined, name: string): string[] => {
  const value = form?.[name]
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** The field an AppError is about, as the form names it, and its message. */
function fieldError(error: unknown, fields: Record<string, string> = {}): Record<string, string> {
  if (!(error instanceof AppError) || error.status >= 500) throw error
  const field = error.field ? (fields[error.field] ?? error.field) : 'form'
  return { [field]: error.message }
}

export const accountPagesRoutes: Routes = async (app, { services, config, web }) => {
  const { accounts, apiKeys, setup, connectedApps } = services
  await app.register(formBody, { bodyLimit: 16 * 1024, parser: parseFormStrictly })
  const sessions = new WebSessions(app, services.sessions, config.publicUrl)
  const failuresByAccount = app.rateLimitStore(FAILED_SIGN_INS_PER_ACCOUNT)
  const failuresByAddress = app.rateLimitStore(FAILED_SIGN_INS_PER_ADDRESS)
  const signUps = app.rateLimitStore(SIGN_UPS)
  const page = { page: true } as const
  const hidden = { hide: true }
  const open = { config: page, schema: hidden, preHandler: sessions.load }
  const posted = { config: page, schema: hidden, preHandler: [sessions.load, app.csrfProtection] }

  /** The signed-in session, or a redirect to the sign-in page that comes back here. */
  function signedIn(request: FastifyRequest, reply: FastifyReply) {
    const session = request.webSession
    if (!session) {
      const back = request.method === 'GET' ? request.url : ACCOUNT_PATHS.home
      reply.redirect(`${ACCOUNT_PATHS.signIn}?return_to=${encodeURIComponent(back)}`, 303)
    }
    return session
  }

  function tooMany(reply: FastifyReply, retryAfterUs: number) {
    const wait = retryAfterSeconds(retryAfterUs)
    reply.header('retry-after', wait)
    const minutes = Math.ceil(wait / 60)
    return `Too many attempts. Try again in ${minutes} minute${minutes > 1 ? 's' : ''}.`
  }

  app.get(ACCOUNT_PATHS.home, open, async (request, reply) =>
    reply.redirect(request.webSession ? ACCOUNT_PATHS.keys : ACCOUNT_PATHS.signIn, 303),
  )

  // Sign-in and sign-out.

  app.get<{ Querystring: { return_to?: string } }>(ACCOUNT_PATHS.signIn, open, async (request, reply) => {
    const returnTo = safeReturnTo(request.query.return_to, ACCOUNT_PATHS.keys)
    if (request.webSession) return reply.redirect(returnTo, 303)
    const notice = (await setup.pending())
      ? 'No account exists yet: open the setup link the server printed when it started.'
      : undefined
    return web.send(
      reply,
      200,
      signInPage({ csrfToken: csrfToken(request, reply), returnTo, signUpOpen: config.signUpOpen, notice }),
    )
  })

  app.post<{ Body: Form }>(ACCOUNT_PATHS.signIn, posted, async (request, reply) => {
    const email = text(request.body, 'email').trim()
    const returnTo = safeReturnTo(text(request.body, 'return_to'), ACCOUNT_PATHS.keys)
    const again = (status: number, message: string) =>
      web.send(
        reply,
        status,
        signInPage({
          csrfToken: csrfToken(request, reply),
          returnTo,
          signUpOpen: config.signUpOpen,
          values: { email },
          errors: { form: message },
        }),
      )
    let key = email.toLowerCase()
    try {
      key = normaliseEmail(email)
    } catch {}
    // The same for unknown emails as for known ones, so the answers tell nothing of who has an account.
    const buckets = [`sign-in:${key}`, `sign-in-${addressBucket(request.ip)}`] as const
    const refusal = (decisions: { allowed: boolean; retryAfterUs: number }[]) =>
      decisions.every((d) => d.allowed)
        ? undefined
        : again(429, tooMany(reply, Math.max(...decisions.map((d) => d.retryAfterUs))))
    const blocked = refusal(
      await Promise.all([failuresByAccount.peek(buckets[0]), failuresByAddress.peek(buckets[1])]),
    )
    if (blocked) return blocked
    const account = await accounts.verifyPassword(email, text(request.body, 'password'))
    if (!account) {
      await Promise.all([failuresByAccount.hit(buckets[0]), failuresByAddress.hit(buckets[1])])
      return again(401, 'The email or the password is not right.')
    }
    await sessions.signIn(request, reply, account)
    return reply.redirect(returnTo, 303)
  })

  app.post(ACCOUNT_PATHS.signOut, posted, async (request, reply) => {
    await sessions.signOut(request, reply)
    return reply.redirect(ACCOUNT_PATHS.signIn, 303)
  })

  app.post(ACCOUNT_PATHS.signOutEverywhere, posted, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    await services.sessions.endAll(session.account.id)
    sessions.clear(reply)
    return reply.redirect(ACCOUNT_PATHS.signIn, 303)
  })

  // New accounts: the first-run setup link, and the sign-up page when it is open.

  /** Checks a new account's form, creates the account with `create`, and signs it in. */
  async function newAccount(
    request: FastifyRequest<{ Body: Form }>,
    reply: FastifyReply,
    create: (input: { email: string; password: string }) => Promise<Account>,
    render: (state: FormState) => ReturnType<typeof setupPage>,
    returnTo: string,
  ) {
    const email = text(request.body, 'email').trim()
    const password = text(request.body, 'password')
    const again = (errors: Record<string, string>) =>
      web.send(reply, 400, render({ csrfToken: csrfToken(request, reply), values: { email }, errors }))
    if (password !== text(request.body, 'confirm')) {
      return again({ confirm: 'The two passwords are not the same.' })
    }
    let account: Account
    try {
      account = await create({ email, password })
    } catch (error) {
      if (error instanceof AppError && error.code === 'gone') return web.sendError(reply, 410, SETUP_USED)
      return again(fieldError(error))
    }
    await sessions.signIn(request, reply, account)
    return reply.redirect(returnTo, 303)
  }

  app.get<{ Params: { secret: string } }>(`${ACCOUNT_PATHS.setup}/:secret`, open, async (request, reply) => {
    if (!(await setup.isValid(request.params.secret))) return web.sendError(reply, 410, SETUP_USED)
    return web.send(reply, 200, setupPage({ csrfToken: csrfToken(request, reply), action: request.url }))
  })

  app.post<{ Params: { secret: string }; Body: Form }>(
    `${ACCOUNT_PATHS.setup}/:secret`,
    posted,
    async (request, reply) =>
      newAccount(
        request,
        reply,
        (input) => setup.redeem(request.params.secret, input),
        (state) => setupPage({ ...state, action: request.url }),
        ACCOUNT_PATHS.keys,
      ),
  )

  if (config.signUpOpen) {
    app.get<{ Querystring: { return_to?: string } }>(ACCOUNT_PATHS.signUp, open, async (request, reply) => {
      const returnTo = safeReturnTo(request.query.return_to, ACCOUNT_PATHS.keys)
      if (request.webSession) return reply.redirect(returnTo, 303)
      return web.send(reply, 200, signUpPage({ csrfToken: csrfToken(request, reply), returnTo }))
    })
    app.post<{ Body: Form }>(ACCOUNT_PATHS.signUp, posted, async (request, reply) => {
      const returnTo = safeReturnTo(text(request.body, 'return_to'), ACCOUNT_PATHS.keys)
      const byAddress = await signUps.hit(`sign-up-${addressBucket(request.ip)}`)
      if (!byAddress.allowed) {
        const message = tooMany(reply, byAddress.retryAfterUs)
        return web.send(
          reply,
          429,
          signUpPage({ csrfToken: csrfToken(request, reply), returnTo, errors: { form: message } }),
        )
      }
      return newAccount(
        request,
        reply,
        (input) => accounts.create(input),
        (state) => signUpPage({ ...state, returnTo }),
        returnTo,
      )
    })
  }

  // Settings of a signed-in account.

  app.get(ACCOUNT_PATHS.keys, open, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    const keys = await apiKeys.list(session.account.id)
    return web.send(
      reply,
      200,
      keysPage({ account: session.account, csrfToken: csrfToken(request, reply), keys }),
    )
  })

  app.post<{ Body: Form }>(ACCOUNT_PATHS.newKey, posted, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    const name = text(request.body, 'name')
    const chosen = list(request.body, 'scopes')
    const expires = text(request.body, 'expires')
    const state = { values: { name, expires }, scopes: chosen }
    const show = async (status: number, extra: Partial<Parameters<typeof keysPage>[0]>) =>
      web.send(
        reply,
        status,
        keysPage({
          account: session.account,
          csrfToken: csrfToken(request, reply),
          keys: await apiKeys.list(session.account.id),
          ...extra,
        }),
      )
    const refuse = (errors: Record<string, string>) =>
      show(400, { form: { csrfToken: '', ...state, errors } })
    if (!chosen.every(isScope)) return refuse({ scopes: 'Choose scopes from the list.' })
    let expiresAt: number | null = null
    if (expires !== '') {
      expiresAt = /^\d{4}-\d{2}-\d{2}$/.test(expires) ? Date.parse(`${expires}T00:00:00Z`) : Number.NaN
      if (Number.isNaN(expiresAt)) return refuse({ expires: 'Give the date as YYYY-MM-DD.' })
    }
    try {
      const created = await apiKeys.create({
        accountId: session.account.id,
        name,
        scopes: chosen as Scope[],
        expiresAt,
      })
      // The secret is in this answer only: it must not be kept by a cache or restored by the history.
      return show(201, { created })
    } catch (error) {
      return refuse(fieldError(error, { expiresAt: 'expires' }))
    }
  })

  app.post<{ Params: { keyId: string } }>(
    `${ACCOUNT_PATHS.keys}/:keyId/revoke`,
    posted,
    async (request, reply) => {
      const session = signedIn(request, reply)
      if (!session) return reply
      await apiKeys.revoke(request.params.keyId, session.account.id)
      return reply.redirect(ACCOUNT_PATHS.keys, 303)
    },
  )

  app.get(ACCOUNT_PATHS.apps, open, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    const apps = await connectedApps.list(session.account.id)
    return web.send(
      reply,
      200,
      appsPage({ account: session.account, csrfToken: csrfToken(request, reply), apps }),
    )
  })

  app.post<{ Params: { grantId: string } }>(
    `${ACCOUNT_PATHS.apps}/:grantId/revoke`,
    posted,
    async (request, reply) => {
      const session = signedIn(request, reply)
      if (!session) return reply
      await connectedApps.revoke(session.account.id, request.params.grantId)
      return reply.redirect(ACCOUNT_PATHS.apps, 303)
    },
  )

  app.get(ACCOUNT_PATHS.password, open, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    return web.send(
      reply,
      200,
      passwordPage({ account: session.account, csrfToken: csrfToken(request, reply) }),
    )
  })

  app.post<{ Body: Form }>(ACCOUNT_PATHS.password, posted, async (request, reply) => {
    const session = signedIn(request, reply)
    if (!session) return reply
    const next = text(request.body, 'password')
    const show = (status: number, extra: Partial<Parameters<typeof passwordPage>[0]>) =>
      web.send(
        reply,
        status,
        passwordPage({ account: session.account, csrfToken: csrfToken(request, reply), ...extra }),
      )
    if (next !== text(request.body, 'confirm')) {
      return show(400, {
        form: { csrfToken: '', errors: { confirm: 'The two passwords are not the same.' } },
      })
    }
    try {
      await accounts.changePassword({
        accountId: session.account.id,
        sessionId: session.id,
        current: text(request.body, 'current'),
        next,
      })
    } catch (error) {
      return show(400, { form: { csrfToken: '', errors: fieldError(error) } })
    }
    return show(200, { notice: 'Your password was changed. Every other session was signed out.' })
  })
}

const SETUP_USED = {
  title: 'This setup link no longer works',
  message:
    'It was used, or it expired. Sign in, or if no account exists yet, restart the server: it prints a new link.',
}
