// The account pages, for people in a browser (views in account-pages.views.ts):
// - /account/setup/{secret}: the first account, from the one-time link the server printed at start.
// - /account/sign-in, /account/sign-up (SIGNUP=open only), /account/sign-out, /account/sign-out-everywhere.
// - /account/keys (create, list, revoke API keys), /account/apps (connected OAuth applications; revoke),
//   /account/password (change it; other sessions end).
// Every POST checks its form's CSRF token (@fastify/csrf-protection, bound to the session), and reads its form
// through a TypeBox schema (web/form-reader.ts): a bad field is the page again, with status 400 and the
// field marked. Every answer is a page. After a successful POST the browser is redirected (303), so a reload
// never sends a form twice; a new API key's secret follows the redirect sealed in a cookie, and is shown once
// (new-key-notes.ts). Signing in and the first-run setup lead to the app's home page unless `return_to` names
// another page of this server. With a provider of single sign-on (config.oidc), the sign-in and sign-up pages
// carry its button (sso/ serves what it posts to); SSO_ONLY=true leaves only the button, and a password form for
// admins behind a link (`?with=password`), the break-glass for when the provider cannot be used: a password
// signs in admins only then, set with the admin command (`accounts set-password`).
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { ALL_SCOPES } from '../../platform/auth/scopes.ts'
import { AppError } from '../../platform/errors.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { addressBucket } from '../../platform/http/rate-limit.ts'
import {
  endOfDay,
  knownTimeZone,
  readerTimeZone,
  refuseEndedDay,
  TimeZoneField,
} from '../../platform/web/chosen-days.ts'
import { type FormReading, formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, refusalOf } from '../../platform/web/forms.ts'
import type { Page } from '../../platform/web/layout.ts'
import {
  ACCOUNT_PATHS,
  forgotPasswordPage,
  keysPage,
  PASSWORD_VIEW,
  passwordPage,
  resetPasswordPage,
  type SignedOutForm,
  setupPage,
  signInPage,
  signUpPage,
} from './account-pages.views.ts'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, type SignUp, type Throttled } from './accounts.service.ts'
import { NOTE_SECONDS } from './new-key-notes.ts'
import { appNav, csrfToken, safeReturnTo } from './web-sessions.ts'

/** Where signing in, signing up and the first-run setup lead when no `return_to` says otherwise. */
const HOME = '/'

const Email = Type.String({ maxLength: 254 })
/** A password given to sign in or to prove who one is: only its length is bounded here. */
const GivenPassword = Type.String({ maxLength: MAX_PASSWORD_LENGTH })
/** A new password, held to the rule the accounts service applies (and applies again). */
const NewPassword = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH })
/** Checked by safeReturnTo, which falls back to the home page for anything that is not a path here. */
const ReturnTo = Type.Optional(Type.String())

const readSignIn = formReader(
  Type.Object(
    {
      email: Email,
      password: GivenPassword,
      return_to: ReturnTo,
      [PASSWORD_VIEW.name]: Type.Optional(Type.Literal(PASSWORD_VIEW.value)),
    },
    { additionalProperties: false },
  ),
)
const NewAccountForm = Type.Object(
  { email: Email, password: NewPassword, confirm: GivenPassword },
  { additionalProperties: false },
)
const readSetup = formReader(NewAccountForm)
const readSignUp = formReader(
  Type.Object({ ...NewAccountForm.properties, return_to: ReturnTo }, { additionalProperties: false }),
)
const readNewKey = formReader(
  Type.Object(
    {
      name: Type.String({ maxLength: 100 }),
      scopes: Type.Array(Type.Enum(ALL_SCOPES), {
        minItems: 1,
        maxItems: ALL_SCOPES.length,
        uniqueItems: true,
        errorMessage: 'Choose at least one scope from the list.',
      }),
      expires: Type.Optional(Type.String({ format: 'date', errorMessage: 'Give the date as YYYY-MM-DD.' })),
      timeZone: TimeZoneField,
    },
    { additionalProperties: false },
  ),
)
const readPasswordChange = formReader(
  Type.Object(
    { current: GivenPassword, password: NewPassword, confirm: GivenPassword },
    { additionalProperties: false },
  ),
)

const readForgotPassword = formReader(Type.Object({ email: Email }, { additionalProperties: false }))
const readPasswordReset = formReader(
  Type.Object({ password: NewPassword, confirm: GivenPassword }, { additionalProperties: false }),
)

const PASSWORDS_DIFFER = { confirm: 'The two passwords are not the same.' }

/** The field an AppError of a service is about, as the form names it, and its message. */
const fieldError = (error: unknown, fields: Record<string, string> = {}) =>
  refusalOf(error, { fields }).errors

export const accountPagesRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kit = accountPagesKit(app, deps)
  for (const routes of [
    signInRoutes,
    signOutRoutes,
    newAccountRoutes,
    passwordResetRoutes,
    keyRoutes,
    accountSettingsRoutes,
  ]) {
    routes(app, kit)
  }
}

/** What every account page's routes share: the services, the option presets, and two helpers. */
function accountPagesKit(app: RouteApp, { services, config, web, webSessions }: RouteDeps) {
  const { accounts, apiKeys, setup, passwordReset } = services
  const page = { page: true } as const
  const hidden = { hide: true }
  /** Pages of a signed-out visitor (or anyone): the session is read, if there is one. */
  const open = { config: page, schema: hidden, preValidation: webSessions.load }
  const posted = { config: page, schema: hidden, preValidation: [webSessions.load, app.csrfProtection] }
  /** Settings: a signed-out browser is sent to sign in, and comes back. */
  const signedIn = { config: page, schema: hidden, preValidation: webSessions.requireSession }
  const signedInPost = {
    config: page,
    schema: hidden,
    preValidation: [webSessions.requireSession, app.csrfProtection],
  }

  /** Without email (SMTP_URL), no link can be sent: the pages neither offer nor serve it. */
  const canResetPassword = passwordReset !== undefined
  /** Single sign-on as the pages offer it (sso/ serves its routes), when a provider is set. */
  const sso = config.oidc && { name: config.oidc.name, only: config.oidc.only }
  /**
   * Where the provider's button leads: its start answers with a redirect to the provider, which CSP's
   * `form-action` must allow (the provider's authorization endpoint is on its issuer's origin).
   */
  const formTarget = config.oidc && new URL(config.oidc.issuer).origin
  /** A page of a signed-out visitor, whose forms may include the provider's button. */
  const sendSignedOut = (reply: FastifyReply, status: number, shown: Page) =>
    web.send(reply, status, shown, { formTarget })

  /** The session of a request that passed requireSession. */
  const sessionOf = (request: FastifyRequest) => {
    const session = request.webSession
    if (!session) throw new Error('a settings route without requireSession')
    return session
  }

  /** A refusal for too many attempts: its Retry-After, and what the form says. */
  function tooMany(reply: FastifyReply, refusal: Throttled): string {
    reply.header('retry-after', refusal.retryAfterSeconds)
    const minutes = Math.ceil(refusal.retryAfterSeconds / 60)
    return `Too many attempts. Try again in ${minutes} minute${minutes > 1 ? 's' : ''}.`
  }
  return {
    accounts,
    apiKeys,
    setup,
    passwordReset,
    services,
    config,
    web,
    webSessions,
    open,
    posted,
    signedIn,
    signedInPost,
    canResetPassword,
    sso,
    sendSignedOut,
    sessionOf,
    tooMany,
  }
}

type Kit = ReturnType<typeof accountPagesKit>

/** Signing in with a password (for admins alone with SSO_ONLY). */
function signInRoutes(
  app: RouteApp,
  { accounts, setup, config, webSessions, open, posted, canResetPassword, sso, sendSignedOut, tooMany }: Kit,
): void {
  app.get<{ Querystring: { return_to?: string; reset?: string; with?: string } }>(
    ACCOUNT_PATHS.signIn,
    open,
    async (request, reply) => {
      const returnTo = safeReturnTo(request.query.return_to, HOME)
      if (request.webSession) return reply.redirect(returnTo, 303)
      const notice = (await setup.pending())
        ? 'No account exists yet: open the setup link the server printed when it started.'
        : request.query.reset === 'done'
          ? 'Your password was changed, and every session of the account ended. Sign in with the new one.'
          : undefined
      return sendSignedOut(
        reply,
        200,
        signInPage({
          csrfToken: csrfToken(request, reply),
          returnTo,
          signUpOpen: config.signUp.policy === 'open',
          canResetPassword,
          notice,
          sso,
          adminPassword: request.query[PASSWORD_VIEW.name] === PASSWORD_VIEW.value,
        }),
      )
    },
  )

  app.post(ACCOUNT_PATHS.signIn, posted, async (request, reply) => {
    const form = readSignIn(request.body)
    const returnTo = safeReturnTo(form.ok ? form.value.return_to : form.values.return_to, HOME)
    const again = (status: number, errors: Record<string, string>) =>
      sendSignedOut(
        reply,
        status,
        signInPage({
          csrfToken: csrfToken(request, reply),
          returnTo,
          signUpOpen: config.signUp.policy === 'open',
          canResetPassword,
          values: form.ok ? { email: form.value.email } : form.values,
          errors,
          sso,
          adminPassword: sso?.only,
        }),
      )
    if (!form.ok) return again(400, form.errors)
    const { email, password } = form.value
    // SSO_ONLY: a password signs in admins only (the break-glass). Anyone else's attempt goes through the same
    // sign-in with a password that matches no account (none is that short), so it is counted, throttled and timed
    // as a wrong password is (one scrypt), and answered alike: the answer tells no one who is an admin, and a
    // member's right password signs nothing in.
    const passwordAllowed = !sso?.only || (await isAdmin(email))
    const result = await accounts.signIn({
      email,
      password: passwordAllowed ? password : '',
      passwordOff: !passwordAllowed,
      client: addressBucket(clientAddress(request)),
      device: webSessions.deviceOf(request),
    })
    switch (result.kind) {
      case 'throttled':
        return again(429, { form: tooMany(reply, result) })
      case 'wrong':
        // The same for unknown emails as for known ones, so the answer tells nothing of who has an account.
        return again(401, {
          form: sso?.only
            ? `The email or the password is not right. Members sign in with ${sso.name}.`
            : 'The email or the password is not right.',
        })
      case 'ok':
        await webSessions.signIn(request, reply, result.account)
        webSessions.rememberDevice(reply, result.device)
        return reply.redirect(returnTo, 303)
    }
  })

  /** Whether `email` names an admin (SSO_ONLY's password form is theirs alone). */
  async function isAdmin(email: string): Promise<boolean> {
    try {
      return (await accounts.findByEmail(email))?.role === 'admin'
    } catch {
      return false
    }
  }
}

/** The settings home, and signing out (this browser, or every one). */
function signOutRoutes(
  app: RouteApp,
  { services, webSessions, posted, signedIn, signedInPost, sessionOf }: Kit,
): void {
  app.get(ACCOUNT_PATHS.home, signedIn, async (_request, reply) => reply.redirect(ACCOUNT_PATHS.keys, 303))

  app.post(ACCOUNT_PATHS.signOut, posted, async (request, reply) => {
    await webSessions.signOut(request, reply)
    return reply.redirect(ACCOUNT_PATHS.signIn, 303)
  })

  app.post(ACCOUNT_PATHS.signOutEverywhere, signedInPost, async (request, reply) => {
    await services.sessions.endAll(sessionOf(request).account.id)
    webSessions.clear(reply)
    return reply.redirect(ACCOUNT_PATHS.signIn, 303)
  })
}

/** New accounts: the first-run setup link, and the sign-up page when it is open. */
function newAccountRoutes(
  app: RouteApp,
  { accounts, setup, config, web, webSessions, open, posted, sso, sendSignedOut, tooMany }: Kit,
): void {
  // New accounts: the first-run setup link, and the sign-up page when it is open.

  /**
   * A new account's form: read, the account created by `create` and signed in, or the form shown again by
   * `render` with what was wrong.
   */
  async function newAccountPost(
    request: FastifyRequest,
    reply: FastifyReply,
    form: FormReading<Static<typeof NewAccountForm>>,
    create: (input: { email: string; password: string }) => Promise<SignUp>,
    render: (state: SignedOutForm) => Page,
    returnTo: string,
  ) {
    const again = (status: number, values: Record<string, string>, errors: Record<string, string>) =>
      sendSignedOut(reply, status, render({ csrfToken: csrfToken(request, reply), values, errors }))
    if (!form.ok) return again(400, form.values, form.errors)
    const { email, password, confirm } = form.value
    if (password !== confirm) return again(400, { email }, PASSWORDS_DIFFER)
    let result: SignUp
    try {
      result = await create({ email, password })
    } catch (error) {
      if (error instanceof AppError && error.code === 'gone') return web.sendError(reply, 410, SETUP_USED)
      return again(400, { email }, fieldError(error))
    }
    if (result.kind === 'throttled') return again(429, { email }, { form: tooMany(reply, result) })
    await webSessions.signIn(request, reply, result.account)
    webSessions.rememberDevice(reply, await accounts.rememberDevice(result.account.id))
    return reply.redirect(returnTo, 303)
  }

  app.get<{ Params: { secret: string } }>(`${ACCOUNT_PATHS.setup}/:secret`, open, async (request, reply) => {
    if (!(await setup.isValid(request.params.secret))) return web.sendError(reply, 410, SETUP_USED)
    return web.send(reply, 200, setupPage({ csrfToken: csrfToken(request, reply), action: request.url }))
  })

  app.post<{ Params: { secret: string } }>(`${ACCOUNT_PATHS.setup}/:secret`, posted, async (request, reply) =>
    newAccountPost(
      request,
      reply,
      readSetup(request.body),
      async (input) => ({ kind: 'created', account: await setup.redeem(request.params.secret, input) }),
      (state) => setupPage({ ...state, action: request.url }),
      HOME,
    ),
  )

  if (config.signUp.policy === 'open') {
    app.get<{ Querystring: { return_to?: string } }>(ACCOUNT_PATHS.signUp, open, async (request, reply) => {
      const returnTo = safeReturnTo(request.query.return_to, HOME)
      if (request.webSession) return reply.redirect(returnTo, 303)
      return sendSignedOut(reply, 200, signUpPage({ csrfToken: csrfToken(request, reply), returnTo, sso }))
    })
  }
  // SSO_ONLY: new accounts come from the provider alone (sso/), so the page has no password form to post.
  if (config.signUp.policy === 'open' && !sso?.only) {
    app.post(ACCOUNT_PATHS.signUp, posted, async (request, reply) => {
      const form = readSignUp(request.body)
      const returnTo = safeReturnTo(form.ok ? form.value.return_to : form.values.return_to, HOME)
      return newAccountPost(
        request,
        reply,
        form,
        (input) => accounts.signUp({ ...input, client: addressBucket(clientAddress(request)) }),
        (state) => signUpPage({ ...state, returnTo, sso }),
        returnTo,
      )
    })
  }
}

/** Forgotten passwords, when the server sends email. */
function passwordResetRoutes(
  app: RouteApp,
  { passwordReset, web, webSessions, open, posted, tooMany }: Kit,
): void {
  if (passwordReset) {
    app.get(ACCOUNT_PATHS.forgotPassword, open, async (request, reply) =>
      web.send(reply, 200, forgotPasswordPage({ csrfToken: csrfToken(request, reply) })),
    )
    app.post(ACCOUNT_PATHS.forgotPassword, posted, async (request, reply) => {
      const form = readForgotPassword(request.body)
      const again = (status: number, errors: Record<string, string>) =>
        web.send(
          reply,
          status,
          forgotPasswordPage({
            csrfToken: csrfToken(request, reply),
            values: form.ok ? form.value : form.values,
            errors,
          }),
        )
      if (!form.ok) return again(400, form.errors)
      let result: Awaited<ReturnType<typeof passwordReset.request>>
      try {
        result = await passwordReset.request(form.value.email, addressBucket(clientAddress(request)))
      } catch (error) {
        return again(400, fieldError(error))
      }
      if (result.kind === 'throttled') return again(429, { form: tooMany(reply, result) })
      return web.send(
        reply,
        200,
        forgotPasswordPage({ csrfToken: csrfToken(request, reply), sentTo: form.value.email.trim() }),
      )
    })
    const resetPath = `${ACCOUNT_PATHS.resetPassword}/:secret`
    app.get<{ Params: { secret: string } }>(resetPath, open, async (request, reply) => {
      const valid = await passwordReset.isValid(request.params.secret)
      const page = resetPasswordPage({ csrfToken: csrfToken(request, reply), action: request.url, valid })
      return web.send(reply, valid ? 200 : 410, page)
    })
    app.post<{ Params: { secret: string } }>(resetPath, posted, async (request, reply) => {
      const form = readPasswordReset(request.body)
      const again = (status: number, errors: Record<string, string>, valid = true) =>
        web.send(
          reply,
          status,
          resetPasswordPage({ csrfToken: csrfToken(request, reply), action: request.url, valid, errors }),
        )
      if (!form.ok) return again(400, form.errors)
      if (form.value.password !== form.value.confirm) return again(400, PASSWORDS_DIFFER)
      let done: boolean
      try {
        done = await passwordReset.reset(request.params.secret, form.value.password)
      } catch (error) {
        return again(400, fieldError(error))
      }
      if (!done) return again(410, {}, false)
      // Whoever was signed in here is signed out with every other session of the account.
      await webSessions.signOut(request, reply)
      return reply.redirect(`${ACCOUNT_PATHS.signIn}?reset=done`, 303)
    })
  }
}

/** API keys: the list, a new key shown once, revoking. */
function keyRoutes(app: RouteApp, { apiKeys, config, web, signedIn, signedInPost, sessionOf }: Kit): void {
  /** The cookie that carries a new key's sealed secret from its form to this page, once (new-key-notes.ts). */
  const newKeyCookie = {
    name: config.publicUrl.startsWith('https:') ? '__Host-coffer_new_key' : 'coffer_new_key',
    options: {
      path: '/',
      httpOnly: true,
      sameSite: 'strict' as const,
      secure: config.publicUrl.startsWith('https:'),
    },
  }

  app.get(ACCOUNT_PATHS.keys, signedIn, async (request, reply) => {
    const accountId = sessionOf(request).account.id
    const keys = await apiKeys.list(accountId)
    const sealed = request.cookies[newKeyCookie.name]
    const note = sealed === undefined ? undefined : await apiKeys.notes.open(accountId, sealed)
    const key = note && keys.find((each) => each.id === note.keyId)
    if (sealed === undefined) {
      return web.send(
        reply,
        200,
        keysPage({ nav: appNav(request, reply, 'account'), keys, timeZone: readerTimeZone(request) }),
      )
    }
    // Shown once: the note goes with this answer, which no cache keeps and no history restores.
    reply.clearCookie(newKeyCookie.name, newKeyCookie.options)
    reply.header('cache-control', 'no-store')
    const created = key && note ? { key, secret: note.secret } : undefined
    return web.send(
      reply,
      200,
      keysPage({ nav: appNav(request, reply, 'account'), keys, created, timeZone: readerTimeZone(request) }),
    )
  })

  app.post(ACCOUNT_PATHS.newKey, signedInPost, async (request, reply) => {
    const accountId = sessionOf(request).account.id
    const show = async (status: number, extra: Partial<Parameters<typeof keysPage>[0]>) =>
      web.send(
        reply,
        status,
        keysPage({
          nav: appNav(request, reply, 'account'),
          keys: await apiKeys.list(accountId),
          timeZone: readerTimeZone(request),
          ...extra,
        }),
      )
    const form = refuseEndedDay(
      readNewKey(request.body),
      'expires',
      'Choose today or a later day, or leave it empty.',
    )
    if (!form.ok) return show(400, { form })
    const { name, scopes, expires, timeZone } = form.value
    try {
      const created = await apiKeys.create({
        accountId,
        name,
        scopes,
        // The end of the day where it was chosen, as the field's hint says.
        expiresAt: expires === undefined ? null : endOfDay(expires, knownTimeZone(timeZone)),
      })
      // A redirect, so that a reload or Back makes no second key; the secret goes sealed, in a cookie that the
      // page reads once and clears.
      const sealed = await apiKeys.notes.seal(accountId, { keyId: created.key.id, secret: created.secret })
      reply.setCookie(newKeyCookie.name, sealed, { ...newKeyCookie.options, maxAge: NOTE_SECONDS })
      return reply.redirect(ACCOUNT_PATHS.keys, 303)
    } catch (error) {
      const values = { name, scopes: scopes.join(', '), expires: expires ?? '' }
      return show(400, { form: { values, errors: fieldError(error, { expiresAt: 'expires' }) } })
    }
  })

  app.post<{ Params: { keyId: string } }>(
    `${ACCOUNT_PATHS.keys}/:keyId/revoke`,
    signedInPost,
    async (request, reply) => {
      await apiKeys.revoke(request.params.keyId, sessionOf(request).account.id)
      return reply.redirect(ACCOUNT_PATHS.keys, 303)
    },
  )
}

/** The password. */
function accountSettingsRoutes(
  app: RouteApp,
  { accounts, web, signedIn, signedInPost, sessionOf }: Kit,
): void {
  app.get(ACCOUNT_PATHS.password, signedIn, async (request, reply) =>
    web.send(
      reply,
      200,
      passwordPage({
        nav: appNav(request, reply, 'account'),
        failedSignIns: await accounts.failedSignIns(sessionOf(request).account.id),
      }),
    ),
  )

  app.post(ACCOUNT_PATHS.password, signedInPost, async (request, reply) => {
    const session = sessionOf(request)
    const show = async (status: number, extra: Partial<Parameters<typeof passwordPage>[0]>) =>
      web.send(
        reply,
        status,
        passwordPage({
          nav: appNav(request, reply, 'account'),
          failedSignIns: await accounts.failedSignIns(session.account.id),
          ...extra,
        }),
      )
    const form = readPasswordChange(request.body)
    if (!form.ok) return show(400, { form })
    const { current, password, confirm } = form.value
    if (password !== confirm) return show(400, { form: { errors: PASSWORDS_DIFFER } })
    try {
      await accounts.changePassword({
        accountId: session.account.id,
        sessionId: session.id,
        current,
        next: password,
      })
    } catch (error) {
      return show(400, { form: { errors: fieldError(error) } })
    }
    return show(200, { notice: 'Your password was changed. Every other session was signed out.' })
  })
}

const SETUP_USED = {
  title: 'This setup link no longer works',
  message:
    'It was used, or it expired. Sign in, or if no account exists yet, restart the server: it prints a new link.',
}
