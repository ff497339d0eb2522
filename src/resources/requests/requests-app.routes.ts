// The owner's file requests in the web app (views in requests-app.views.ts):
// - GET /requests: the account's requests, newest first, paged with the API's cursors (`?cursor=`).
// - GET /requests/new, POST /requests: the form of a new request, with its limits, made in one transaction.
// - GET /requests/{id}: its page: public link, limits, actions, and its submissions, paged.
// - GET /requests/{id}/edit, POST /requests/{id}: everything of it, limits included, changed in one transaction.
// - POST /requests/{id}/disable, /enable, /move.
// Everything needs the session; every change is a POST with its CSRF token, answered with a 303 to the
// request's page and a fixed `done` code; another account's id is a 404 page (the service's not_found). The
// rules are RequestsService's, the same the API's routes call.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { AppError } from '../../platform/errors.ts'
import {
  dayEndingAt,
  endOfDay,
  knownTimeZone,
  readerTimeZone,
  refuseEndedDay,
  TimeZoneField,
} from '../../platform/web/chosen-days.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { formatCount, formatSize } from '../../platform/web/format.ts'
import { acceptForms, type FormState, type Refusal, refusalOf } from '../../platform/web/forms.ts'
import { appNav, csrfToken, sessionAccountId } from '../accounts/web-sessions.ts'
import { Description, MAX_FILES_BOUND, Title } from './requests.schemas.ts'
import type { LimitsInput } from './requests.service.ts'
import {
  EMAIL_CHOICES,
  type EmailChoice,
  formValuesOf,
  REQUEST_PATHS,
  requestDetailsPage,
  requestFormPage,
  requestsListPage,
} from './requests-app.views.ts'
import { ALLOWED_TYPES_LIMITS } from './submission-rules.shared.ts'

/** Requests per page of the list, and submissions per page of a request. */
const PAGE_SIZE = 25
/**
 * Folders a form offers at most, by name. An account may have any number; a select of thousands helps no
 * one, so past this the hint says how the list is cut.
 */
const FOLDER_LIMIT = 200

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

/** The sentence each `done` code stands for; the address carries only the code, never text. */
const NOTICES = {
  created: 'File request created. Copy its public link and send it to the people who should send you files.',
  saved: 'Changes saved.',
  disabled: 'File request disabled: its public page no longer accepts files.',
  enabled: 'File request enabled.',
  moved: 'File request moved.',
} as const

const PageQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 128 })),
  done: Type.Optional(Type.Union(Object.keys(NOTICES).map((code) => Type.Literal(code)))),
})

const emailChoice = Type.Union(
  EMAIL_CHOICES.map((choice) => Type.Literal(choice.value)),
  { errorMessage: 'Choose one of the options.' },
)

/** The form of a new or changed request; its bounds are the API's (requests.schemas.ts). */
const RequestFormSchema = Type.Object(
  {
    title: Title,
    description: Type.Optional(Description),
    folderId: Type.Optional(Type.String({ maxLength: 100 })),
    email: emailChoice,
    deadline: Type.Optional(
      Type.String({ format: 'date', errorMessage: 'Enter a day as the date picker gives it: 2027-03-31.' }),
    ),
    // The exact deadline the form opened with, kept while its day is not changed (see `deadlineOf`).
    deadlineKept: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
    maxFiles: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_FILES_BOUND })),
    maxFileSize: Type.Optional(
      Type.Number({
        minimum: 0.001,
        maximum: 1e12,
        errorMessage: 'Enter a size in megabytes, such as 25 or 2.5.',
      }),
    ),
    allowedTypes: Type.Optional(Type.String({ maxLength: 2000 })),
    // A checkbox: sent as "on" when checked, not at all otherwise. Shown only when the server sends email.
    emailOwner: Type.Optional(Type.Literal('on')),
    timeZone: TimeZoneField,
  },
  { additionalProperties: false },
)
const readRequestForm = formReader(RequestFormSchema)
type RequestForm = Static<typeof RequestFormSchema>

const readMoveForm = formReader(
  Type.Object({ folderId: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
)

const EMAIL_SETTINGS: Record<EmailChoice, { collectEmail: boolean; emailRequired: boolean }> = {
  required: { collectEmail: true, emailRequired: true },
  optional: { collectEmail: true, emailRequired: false },
  off: { collectEmail: false, emailRequired: false },
}

/** What the deadline's field says when its day has already ended. */
const PAST_DEADLINE = 'Choose today or a later day, or leave it empty.'

/**
 * The deadline the form asks for: the end of the chosen day in the zone the form was shown in, or the exact
 * deadline the form was opened with while its day was left as it was (one set through the API at 14:30 stays
 * at 14:30).
 */
function deadlineOf(form: RequestForm): number | null {
  if (form.deadline === undefined) return null
  const timeZone = knownTimeZone(form.timeZone)
  const kept = form.deadlineKept === undefined ? Number.NaN : Date.parse(form.deadlineKept)
  if (!Number.isNaN(kept) && dayEndingAt(kept, timeZone) === form.deadline) return kept
  return endOfDay(form.deadline, timeZone)
}

/** The allowed types as typed: entries separated by commas or spaces. */
const typesOf = (text: string | undefined) => (text ?? '').split(/[\s,]+/).filter((entry) => entry !== '')

/** What the service is given from a valid form, or the problems the service does not see. */
function inputOf(form: RequestForm):
  | { errors: Record<string, string> }
  | {
      fields: { title: string; description: string | null; folderId: string | null }
      email: { collectEmail: boolean; emailRequired: boolean }
      limits: LimitsInput
    } {
  const allowedTypes = typesOf(form.allowedTypes)
  if (allowedTypes.length > ALLOWED_TYPES_LIMITS.entries) {
    return { errors: { allowedTypes: `List at most ${ALLOWED_TYPES_LIMITS.entries} types.` } }
  }
  return {
    fields: {
      title: form.title,
      description: form.description ?? null,
      folderId: form.folderId ?? null,
    },
    email: EMAIL_SETTINGS[form.email],
    limits: {
      deadlineAt: deadlineOf(form),
      maxFiles: form.maxFiles ?? null,
      // The form's megabytes are decimal, as the sizes the pages show.
      maxFileSize:
        form.maxFileSize === undefined ? null : Math.max(1, Math.round(form.maxFileSize * 1_000_000)),
      allowedTypes,
    },
  }
}

/**
 * A refusal of the service, said beside the field it names in words for the person at the form (the API's
 * messages name its body's properties). A not_found without a field (the request itself, another account's
 * included) and faults go on to the error pages.
 */
function problemOf(error: unknown, context: { allowedTypes?: string[]; serverMaxFileSize: number }): Refusal {
  // Rounded down, so that the number said is one the server takes.
  const megabytes = Math.floor(context.serverMaxFileSize / 100_000) / 10
  const messages: Record<string, string> = {
    deadline: PAST_DEADLINE,
    maxFileSize: `Enter at most ${formatCount(megabytes)} MB (${formatSize(context.serverMaxFileSize)}), the largest file this server accepts.`,
    title: 'Use at least 3 characters, not counting spaces at either end.',
    folderId: 'This folder no longer exists. Choose another.',
  }
  const fields: Record<string, string> = {}
  // An entry of the list of types, `allowedTypes[2]`, is said of the list, quoting what was typed.
  const field = error instanceof AppError ? error.field : undefined
  const entry = /^allowedTypes\[(\d+)\]$/.exec(field ?? '')
  if (field && entry) {
    const typed = context.allowedTypes?.[Number(entry[1])] ?? ''
    fields[field] = 'allowedTypes'
    messages[field] = `“${typed}” is neither an extension such as .pdf nor a media type such as image/*.`
  }
  return refusalOf(error, { fields, messages })
}

export const requestsAppRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kit = requestsAppKit(app, deps)
  for (const routes of [listAndNewRoutes, requestPageRoutes, editRoutes]) routes(app, kit)
}

/** What every request page's routes share: the service, the option presets, and what each page shows. */
function requestsAppKit(app: RouteApp, { services, config, urls, web, webSessions }: RouteDeps) {
  const { requests } = services
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }
  const serverMaxFileSize = config.maxFileSize
  const linkOf = (request: { publicId: string }) => urls.requestPage(request.publicId)
  /** The form's switch "Email me on each submission": only when the server sends email (SMTP_URL). */
  const canEmail = config.mail !== undefined
  /** The switch as the form sent it, when the form had it. */
  const emailOwnerOf = (form: RequestForm) => (canEmail ? { emailOwner: form.emailOwner === 'on' } : {})

  function common(request: FastifyRequest, reply: FastifyReply, done?: keyof typeof NOTICES) {
    return {
      nav: appNav(request, reply, 'requests'),
      csrfToken: csrfToken(request, reply),
      notice: done === undefined ? undefined : NOTICES[done],
      timeZone: readerTimeZone(request),
    }
  }
  return {
    requests,
    config,
    urls,
    web,
    webSessions,
    signedIn,
    posted,
    serverMaxFileSize,
    linkOf,
    canEmail,
    emailOwnerOf,
    common,
  }
}

type Kit = ReturnType<typeof requestsAppKit>

/** The list of requests, and the form of a new one. */
function listAndNewRoutes(
  app: RouteApp,
  { requests, web, signedIn, posted, serverMaxFileSize, linkOf, canEmail, emailOwnerOf, common }: Kit,
): void {
  app.get(
    REQUEST_PATHS.list,
    { ...signedIn, schema: { hide: true, querystring: PageQuery } },
    async (request, reply) => {
      const { cursor, done } = request.query
      const listed = await requests.list(sessionAccountId(request), { cursor, limit: PAGE_SIZE })
      return web.send(
        reply,
        200,
        requestsListPage({
          ...common(request, reply, done),
          requests: listed.items,
          nextCursor: listed.nextCursor,
          later: cursor !== undefined,
          linkOf,
          now: Date.now(),
        }),
      )
    },
  )

  /** The form of a new request, shown again with its problems when `state` has them. */
  async function newForm(request: FastifyRequest, reply: FastifyReply, status: number, state?: FormState) {
    const folders = await requests.folderChoices(sessionAccountId(request), FOLDER_LIMIT)
    return web.send(
      reply,
      status,
      requestFormPage({
        ...common(request, reply),
        state,
        folders,
        serverMaxFileSize,
        folderLimit: FOLDER_LIMIT,
        canEmail,
      }),
    )
  }

  app.get(REQUEST_PATHS.new, { ...signedIn, schema: { hide: true } }, (request, reply) =>
    newForm(request, reply, 200),
  )

  app.post(REQUEST_PATHS.create, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const form = refuseEndedDay(readRequestForm(request.body), 'deadline', PAST_DEADLINE)
    if (!form.ok) return newForm(request, reply, 400, form)
    const input = inputOf(form.value)
    if ('errors' in input) {
      return newForm(request, reply, 400, { values: valuesOf(request.body), errors: input.errors })
    }
    try {
      const created = await requests.create(sessionAccountId(request), {
        ...input.fields,
        description: input.fields.description ?? undefined,
        ...input.email,
        ...emailOwnerOf(form.value),
        limits: input.limits,
      })
      return reply.redirect(`${REQUEST_PATHS.page(created.id)}?done=created`, 303)
    } catch (error) {
      const problem = problemOf(error, { allowedTypes: input.limits.allowedTypes, serverMaxFileSize })
      return newForm(request, reply, problem.status, {
        values: valuesOf(request.body),
        errors: problem.errors,
      })
    }
  })
}

/** A request's page, and its actions: disable, enable, move. */
function requestPageRoutes(
  app: RouteApp,
  { requests, web, signedIn, posted, serverMaxFileSize, linkOf, common }: Kit,
): void {
  /** A request's page; `moveState` shows the move form again with its problem. */
  async function detailsPage(
    request: FastifyRequest<{ Params: { id: string } }>,
    reply: FastifyReply,
    options: { status: number; cursor?: string; done?: keyof typeof NOTICES; moveState?: FormState },
  ) {
    const details = await requests.details(sessionAccountId(request), request.params.id, {
      cursor: options.cursor,
      limit: PAGE_SIZE,
      folderLimit: FOLDER_LIMIT,
    })
    return web.send(
      reply,
      options.status,
      requestDetailsPage({
        ...common(request, reply, options.done),
        request: details.request,
        publicUrl: linkOf(details.request),
        submissions: details.submissions.items,
        nextCursor: details.submissions.nextCursor,
        later: options.cursor !== undefined,
        folders: details.folders,
        folderLimit: FOLDER_LIMIT,
        moveState: options.moveState,
        serverMaxFileSize,
        now: Date.now(),
      }),
    )
  }

  app.get(
    '/requests/:id',
    { ...signedIn, schema: { hide: true, params: IdParams, querystring: PageQuery } },
    (request, reply) =>
      detailsPage(request, reply, { status: 200, cursor: request.query.cursor, done: request.query.done }),
  )

  app.post(
    '/requests/:id/move',
    { ...posted, schema: { hide: true, params: IdParams } },
    async (request, reply) => {
      const form = readMoveForm(request.body)
      if (!form.ok) return detailsPage(request, reply, { status: 400, moveState: form })
      try {
        await requests.update(sessionAccountId(request), request.params.id, {
          folderId: form.value.folderId ?? null,
        })
      } catch (error) {
        const problem = problemOf(error, { serverMaxFileSize })
        return detailsPage(request, reply, {
          status: problem.status,
          moveState: { values: valuesOf(request.body), errors: problem.errors },
        })
      }
      return reply.redirect(`${REQUEST_PATHS.page(request.params.id)}?done=moved`, 303)
    },
  )
}

/** The edit form of a request. */
function editRoutes(
  app: RouteApp,
  { requests, web, signedIn, posted, serverMaxFileSize, canEmail, emailOwnerOf, common }: Kit,
): void {
  /** The edit form of a request, as it is or as typed with its problems. */
  async function editForm(
    request: FastifyRequest<{ Params: { id: string } }>,
    reply: FastifyReply,
    status: number,
    state?: FormState,
  ) {
    const editing = await requests.forEditing(sessionAccountId(request), request.params.id, FOLDER_LIMIT)
    return web.send(
      reply,
      status,
      requestFormPage({
        ...common(request, reply),
        state: state ?? { values: formValuesOf(editing.request, readerTimeZone(request)) },
        folders: editing.folders,
        request: editing.request,
        serverMaxFileSize,
        folderLimit: FOLDER_LIMIT,
        canEmail,
      }),
    )
  }

  app.get('/requests/:id/edit', { ...signedIn, schema: { hide: true, params: IdParams } }, (request, reply) =>
    editForm(request, reply, 200),
  )

  app.post(
    '/requests/:id',
    { ...posted, schema: { hide: true, params: IdParams } },
    async (request, reply) => {
      const form = refuseEndedDay(readRequestForm(request.body), 'deadline', PAST_DEADLINE)
      if (!form.ok) return editForm(request, reply, 400, form)
      const input = inputOf(form.value)
      if ('errors' in input) {
        return editForm(request, reply, 400, { values: valuesOf(request.body), errors: input.errors })
      }
      try {
        await requests.update(sessionAccountId(request), request.params.id, {
          ...input.fields,
          ...input.email,
          ...emailOwnerOf(form.value),
          limits: input.limits,
        })
      } catch (error) {
        const problem = problemOf(error, { allowedTypes: input.limits.allowedTypes, serverMaxFileSize })
        return editForm(request, reply, problem.status, {
          values: valuesOf(request.body),
          errors: problem.errors,
        })
      }
      return reply.redirect(`${REQUEST_PATHS.page(request.params.id)}?done=saved`, 303)
    },
  )

  for (const [action, isActive] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    app.post(
      `/requests/:id/${action}`,
      { ...posted, schema: { hide: true, params: IdParams } },
      async (request, reply) => {
        await requests.update(sessionAccountId(request), request.params.id, { isActive })
        return reply.redirect(`${REQUEST_PATHS.page(request.params.id)}?done=${action}d`, 303)
      },
    )
  }
}

/** What was typed, to show again: the form's fields as text (the CSRF token aside). */
function valuesOf(body: unknown): Record<string, string> {
  const values: Record<string, string> = {}
  if (typeof body !== 'object' || body === null) return values
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (name === '_csrf') continue
    if (typeof value === 'string') values[name] = value
    else if (Array.isArray(value)) values[name] = value.join(', ')
  }
  return values
}
