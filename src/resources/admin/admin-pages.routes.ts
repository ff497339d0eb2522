// The admin's pages (views in admin-pages.views.ts): the accounts (GET /admin/accounts, searched by email and
// paged), an account (GET /admin/accounts/{id}) with its role, disabling and enabling, and a password-reset
// link, and the invitations (GET|POST /admin/invitations) with their revocation. For admins only: to anyone else
// every one of them is the 404 page of a path that does not exist. Every change is a POST with its CSRF token,
// answered with a redirect to the page and its notice.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { RouteApp, Routes } from '../../module.ts'
import { invalid } from '../../platform/errors.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { addressBucket } from '../../platform/http/rate-limit.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, refusalOf } from '../../platform/web/forms.ts'
import { type Notices, noticeOf, withNotice } from '../../platform/web/notices.ts'
import type { QuotaChange } from '../quotas/quotas.service.ts'
import { adminKit, type Kit } from './admin-kit.ts'
import {
  ADMIN_PATHS,
  accountPage,
  accountsPage,
  deleteAccountPage,
  invitationsPage,
} from './admin-pages.views.ts'

/** Accounts a page of the list shows. */
const PAGE_SIZE = 50

const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')], { errorMessage: 'Choose a role.' })
const readRole = formReader(Type.Object({ role: Role }, { additionalProperties: false }))
const readQuota = formReader(
  Type.Object(
    {
      quota: Type.Union([Type.Literal('default'), Type.Literal('own'), Type.Literal('unlimited')], {
        errorMessage: 'Choose a quota.',
      }),
      quotaGb: Type.Optional(Type.String({ maxLength: 20 })),
      maxFileGb: Type.Optional(Type.String({ maxLength: 20 })),
    },
    { additionalProperties: false },
  ),
)

/** The storage form's choice, as the quotas service takes it; a 400 naming the field otherwise. */
function quotaChangeOf(body: unknown): QuotaChange {
  const form = readQuota(body)
  if (!form.ok) {
    const [field, message] = Object.entries(form.errors)[0] ?? ['quota', 'Choose a quota.']
    throw invalid(message, undefined, field)
  }
  const { quota, quotaGb, maxFileGb } = form.value
  return {
    quotaBytes:
      quota === 'own'
        ? bytesOf(quotaGb, 'quotaGb', 'Give the quota in GB, such as 10.')
        : quota === 'unlimited'
          ? null
          : 'default',
    maxFileBytes: maxFileGb?.trim()
      ? bytesOf(maxFileGb, 'maxFileGb', 'Give the largest file in GB, such as 2.')
      : null,
  }
}

/** Gigabytes typed on the form (decimal, as sizes are shown), as bytes; a 400 naming `field` otherwise. */
function bytesOf(typed: string | undefined, field: string, hint: string): number {
  const text = (typed ?? '').trim().replace(',', '.')
  if (!/^\d{1,9}(\.\d{1,9})?$/.test(text)) throw invalid(hint, undefined, field)
  return Math.round(Number(text) * 1e9)
}

const readConfirmation = formReader(
  Type.Object({ email: Type.String({ maxLength: 254 }) }, { additionalProperties: false }),
)
const readInvitation = formReader(
  Type.Object(
    { email: Type.Optional(Type.String({ maxLength: 254 })), role: Role },
    { additionalProperties: false },
  ),
)

const ListQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 254 })),
  after: Type.Optional(Type.String({ maxLength: 64 })),
  done: Type.Optional(Type.String({ maxLength: 20 })),
})
const AccountParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 64 }) })
const InvitationParams = Type.Object({ invitationId: Type.String({ minLength: 1, maxLength: 64 }) })
const DoneQuery = Type.Object({ done: Type.Optional(Type.String({ maxLength: 20 })) })

const NOTICES: Notices = {
  role: () => 'Role saved.',
  quota: () => 'Storage limits saved.',
  disabled: () => 'Account disabled: it is signed out everywhere, and its keys and tokens stopped working.',
  enabled: () => 'Account enabled: it can sign in again.',
  'reset-sent': () => 'A password-reset link was emailed to the account.',
  revoked: () => 'Invitation removed: its link no longer works.',
  deleted: () => 'Account deleted: its files are being deleted for good, and the account with them.',
}

export const adminPagesRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kit = adminKit(app, deps)
  for (const routes of [accountListRoutes, accountRoutes, accountDeletionRoutes, invitationRoutes]) {
    routes(app, kit)
  }
}

function accountListRoutes(app: RouteApp, { admin, web, signedIn, nav }: Kit): void {
  app.get(
    ADMIN_PATHS.accounts,
    { ...signedIn, schema: { hide: true, querystring: ListQuery } },
    async (request, reply) => {
      const search = request.query.q?.trim() ?? ''
      const { after } = request.query
      const page = await admin.accounts({ search: search || undefined, after, limit: PAGE_SIZE })
      const next = new URLSearchParams({
        ...(search ? { q: search } : {}),
        ...(page.next ? { after: page.next } : {}),
      })
      return web.send(
        reply,
        200,
        accountsPage({
          nav: nav(request, reply),
          accounts: page.accounts,
          usage: page.usage,
          search,
          nextHref: page.next ? `${ADMIN_PATHS.accounts}?${next}` : null,
          later: after !== undefined,
          notice: noticeOf(NOTICES, request.query.done),
        }),
      )
    },
  )
}

/** An account's page, and what can be done to it. */
function accountRoutes(app: RouteApp, { admin, web, signedIn, posted, nav, actor }: Kit): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    accountId: string,
    status: number,
    extra: { form?: { values: Record<string, string>; errors: Record<string, string> }; notice?: string },
  ) => {
    const account = await admin.account(accountId)
    return web.send(
      reply,
      status,
      accountPage({
        nav: nav(request, reply),
        account,
        usage: await admin.usage(accountId),
        defaultQuotaBytes: admin.defaultQuotaBytes,
        self: account.id === actor(request).id,
        sendsEmail: admin.sendsEmail,
        ...extra,
      }),
    )
  }
  const params = { hide: true, params: AccountParams }

  app.get<{ Params: { accountId: string }; Querystring: { done?: string } }>(
    `${ADMIN_PATHS.accounts}/:accountId`,
    { ...signedIn, schema: { ...params, querystring: DoneQuery } },
    async (request, reply) =>
      show(request, reply, request.params.accountId, 200, { notice: noticeOf(NOTICES, request.query.done) }),
  )

  /** Runs a change of the account; a refusal shows the account's page again with its reason. */
  const change = (
    action: 'role' | 'quota' | 'disable' | 'enable' | 'password-reset',
    run: (request: FastifyRequest<{ Params: { accountId: string } }>) => Promise<unknown>,
    done: string,
  ) =>
    app.post<{ Params: { accountId: string } }>(
      `${ADMIN_PATHS.accounts}/:accountId/${action}`,
      { ...posted, schema: params },
      async (request, reply) => {
        const { accountId } = request.params
        try {
          await run(request)
        } catch (error) {
          const { status, errors } = refusalOf(error, {
            fields: { quotaBytes: 'quotaGb', maxFileBytes: 'maxFileGb' },
          })
          const values =
            typeof request.body === 'object' && request.body !== null
              ? (request.body as Record<string, string>)
              : {}
          return show(request, reply, accountId, status, { form: { values, errors } })
        }
        return reply.redirect(withNotice(ADMIN_PATHS.account(accountId), done), 303)
      },
    )

  change(
    'role',
    async (request) => {
      const form = readRole(request.body)
      if (!form.ok) throw invalid(form.errors.role ?? 'Choose a role.', undefined, 'role')
      await admin.setRole(request.params.accountId, form.value.role)
    },
    'role',
  )
  change('quota', (request) => admin.setQuota(request.params.accountId, quotaChangeOf(request.body)), 'quota')
  change(
    'disable',
    (request) => admin.setDisabled(actor(request), request.params.accountId, true),
    'disabled',
  )
  change('enable', (request) => admin.setDisabled(actor(request), request.params.accountId, false), 'enabled')
  change(
    'password-reset',
    (request) => admin.sendPasswordReset(request.params.accountId, addressBucket(clientAddress(request))),
    'reset-sent',
  )
}

/** Deleting an account, after the admin typed its email on the confirmation page. */
function accountDeletionRoutes(app: RouteApp, { admin, web, signedIn, posted, nav, actor }: Kit): void {
  const params = { hide: true, params: AccountParams }
  app.get<{ Params: { accountId: string } }>(
    `${ADMIN_PATHS.accounts}/:accountId/delete`,
    { ...signedIn, schema: params },
    async (request, reply) => {
      const account = await admin.account(request.params.accountId)
      if (account.deletingAt !== null) return reply.redirect(ADMIN_PATHS.account(account.id), 303)
      return web.send(reply, 200, deleteAccountPage({ nav: nav(request, reply), account }))
    },
  )
  app.post<{ Params: { accountId: string } }>(
    `${ADMIN_PATHS.accounts}/:accountId/delete`,
    { ...posted, schema: params },
    async (request, reply) => {
      const form = readConfirmation(request.body)
      const typed = form.ok ? form.value.email : ''
      try {
        await admin.deleteAccount(actor(request), request.params.accountId, typed)
      } catch (error) {
        const { status, errors } = refusalOf(error)
        const account = await admin.account(request.params.accountId)
        return web.send(
          reply,
          status,
          deleteAccountPage({
            nav: nav(request, reply),
            account,
            form: { values: { email: typed }, errors },
          }),
        )
      }
      return reply.redirect(withNotice(ADMIN_PATHS.accounts, 'deleted'), 303)
    },
  )
}

function invitationRoutes(app: RouteApp, { admin, web, signedIn, posted, nav, actor }: Kit): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    extra: Partial<Parameters<typeof invitationsPage>[0]>,
  ) =>
    web.send(
      reply,
      status,
      invitationsPage({
        nav: nav(request, reply),
        invitations: await admin.invitations(),
        emailsInvitations: admin.invitationsAreEmailed,
        closed: admin.invitationsClosed,
        now: Date.now(),
        ...extra,
      }),
    )

  app.get<{ Querystring: { done?: string } }>(
    ADMIN_PATHS.invitations,
    { ...signedIn, schema: { hide: true, querystring: DoneQuery } },
    async (request, reply) => show(request, reply, 200, { notice: noticeOf(NOTICES, request.query.done) }),
  )

  app.post(ADMIN_PATHS.invitations, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const form = readInvitation(request.body)
    if (!form.ok) return show(request, reply, 400, { form })
    const email = form.value.email?.trim() || undefined
    try {
      // The link is in this answer only: it must not be kept by a cache or restored by the history.
      reply.header('cache-control', 'no-store')
      const created = await admin.invite(actor(request), { email, role: form.value.role })
      return show(request, reply, 201, { created })
    } catch (error) {
      const { status, errors } = refusalOf(error)
      return show(request, reply, status, {
        form: { values: { email: email ?? '', role: form.value.role }, errors },
      })
    }
  })

  app.post<{ Params: { invitationId: string } }>(
    `${ADMIN_PATHS.invitations}/:invitationId/revoke`,
    { ...posted, schema: { hide: true, params: InvitationParams } },
    async (request, reply) => {
      // Another admin's revocation, or a use, may have come first: then it is a 404 page.
      await admin.revokeInvitation(request.params.invitationId)
      return reply.redirect(withNotice(ADMIN_PATHS.invitations, 'revoked'), 303)
    },
  )
}
