// The Share panel's actions on a file's page and on a folder's page in the web app (views in
// files/share-panel.views.ts):
// - POST /files/{fileId}/share, POST /folders/{folderId}/share: makes the file's or the folder's link, or turns a
//   disabled or expired one on again (no expiry).
// - GET|POST /shares/{shareId}/settings, /folder-shares/{shareId}/settings: expiry, password and download limit;
//   the panel's form posts here, and a refused form is shown again on this page, each problem beside its field.
// - POST /shares/{shareId}/disable, /folder-shares/{shareId}/disable: turns the link off (its address and counts
//   stay).
// Each calls one SharesService or FolderSharesService method, the API's own rules. Session only, every change
// with its CSRF token; another account's file, folder or link is a 404 page. After a change the browser goes back
// to the file's or the folder's page, scrolled to its panel.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { html } from 'ghtml'
import { type Static, Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import {
  endOfDay,
  knownTimeZone,
  readerTimeZone,
  refuseEndedDay,
  TimeZoneField,
} from '../../platform/web/chosen-days.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, type FormState, refusalOf } from '../../platform/web/forms.ts'
import { withNotice } from '../../platform/web/notices.ts'
import { appNav, csrfToken, sessionAccountId } from '../accounts/web-sessions.ts'
import { FILE_PATHS } from '../files/files-app.views.ts'
import { SHARE_PATHS, type ShareTargetKind, sharePanel } from '../files/share-panel.views.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from '../files/share-settings.shared.ts'
import type { Link } from './shares.repository.ts'
import type { ShareChanges } from './shares.service.ts'

const SettingsForm = Type.Object(
  {
    expires: Type.Optional(
      Type.String({
        format: 'date',
        errorMessage: 'Give the day as YYYY-MM-DD, or leave it empty for no expiry.',
      }),
    ),
    password: Type.Optional(
      Type.String({
        minLength: PASSWORD_LENGTH.min,
        maxLength: PASSWORD_LENGTH.max,
        errorMessage: `Use ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters, or leave it empty.`,
      }),
    ),
    removePassword: Type.Optional(Type.Literal('on')),
    maxDownloads: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DOWNLOADS_LIMIT,
        errorMessage: 'Give a whole number of downloads, 1 or more, or leave it empty for no limit.',
      }),
    ),
    timeZone: TimeZoneField,
  },
  { additionalProperties: false },
)
const readSettings = formReader(SettingsForm)

/** What the expiry field says when its day has already ended. */
const PAST_DAY = 'Choose today or a later day.'

/** The changes a settings form asks for: the expiry at the end of its day where it was chosen; an empty password keeps it. */
function changesOf(form: Static<typeof SettingsForm>): ShareChanges {
  const changes: ShareChanges = {
    expiresAt: form.expires ? endOfDay(form.expires, knownTimeZone(form.timeZone)) : null,
    maxDownloads: form.maxDownloads ?? null,
  }
  if (form.removePassword) changes.password = null
  else if (form.password) changes.password = form.password
  return changes
}

/** Problems of the service, as the form names its fields and in words for people. */
const FIELD_OF: Record<string, string> = {
  expiresAt: 'expires',
  maxDownloads: 'maxDownloads',
  password: 'password',
}
const PAGE_MESSAGE: Record<string, string> = { expiresAt: PAST_DAY }

const FileParams = Type.Object({ fileId: Type.String({ minLength: 1, maxLength: 100 }) })
const FolderParams = Type.Object({ folderId: Type.String({ minLength: 1, maxLength: 100 }) })
const ShareParams = Type.Object({ shareId: Type.String({ minLength: 1, maxLength: 100 }) })

/** A link as the routes of its kind read it: with what it opens, by id and name. */
interface TargetedLink {
  link: Link
  targetId: string
  targetName: string
}

/**
 * What the routes of one kind of link differ in: the service they call, the page of what the link opens (the
 * panel's place on it), its public address, and the `done` codes of the notices that page shows after a change.
 */
interface LinkKind {
  kind: ShareTargetKind
  get(accountId: string, shareId: string): Promise<TargetedLink>
  update(accountId: string, shareId: string, changes: ShareChanges): Promise<TargetedLink>
  create(accountId: string, targetId: string): Promise<unknown>
  /** The owner's page of the file or folder, at its Share panel. */
  panelOf(targetId: string): string
  publicUrl(publicId: string): string
  done: { on: string; saved: string; off: string }
}

function linkKinds({ services, urls }: RouteDeps): Record<ShareTargetKind, LinkKind> {
  const { shares, folderShares } = services
  const ofFile = (share: { fileId: string; file?: { name: string } } & Link): TargetedLink => ({
    link: share,
    targetId: share.fileId,
    targetName: share.file?.name ?? '',
  })
  const ofFolder = (share: { folderId: string; folder: { name: string } } & Link): TargetedLink => ({
    link: share,
    targetId: share.folderId,
    targetName: share.folder.name,
  })
  return {
    file: {
      kind: 'file',
      get: async (accountId, shareId) => ofFile(await shares.get(accountId, shareId)),
      update: async (accountId, shareId, changes) => ofFile(await shares.update(accountId, shareId, changes)),
      create: (accountId, fileId) => shares.create(accountId, fileId),
      panelOf: (fileId) => `${FILE_PATHS.file(fileId)}#share`,
      publicUrl: (publicId) => urls.sharePage(publicId),
      done: { on: 'share-on', saved: 'share-saved', off: 'share-off' },
    },
    folder: {
      kind: 'folder',
      get: async (accountId, shareId) => ofFolder(await folderShares.get(accountId, shareId)),
      update: async (accountId, shareId, changes) =>
        ofFolder(await folderShares.update(accountId, shareId, changes)),
      create: (accountId, folderId) => folderShares.create(accountId, folderId),
      panelOf: (folderId) => `${FILE_PATHS.folder(folderId)}#share`,
      publicUrl: (publicId) => urls.folderSharePage(publicId),
      done: { on: 'folder-share-on', saved: 'share-saved', off: 'folder-share-off' },
    },
  }
}

export const sharesAppRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kinds = linkKinds(deps)
  const page = { page: true } as const
  const posted = { config: page, preValidation: [deps.webSessions.requireSession, app.csrfProtection] }

  app.post(
    SHARE_PATHS.file.create(':fileId'),
    { ...posted, schema: { hide: true, params: FileParams } },
    async (request, reply) => {
      const { fileId } = request.params
      await kinds.file.create(sessionAccountId(request), fileId)
      return reply.redirect(withNotice(kinds.file.panelOf(fileId), kinds.file.done.on), 303)
    },
  )

  app.post(
    SHARE_PATHS.folder.create(':folderId'),
    { ...posted, schema: { hide: true, params: FolderParams } },
    async (request, reply) => {
      const { folderId } = request.params
      await kinds.folder.create(sessionAccountId(request), folderId)
      return reply.redirect(withNotice(kinds.folder.panelOf(folderId), kinds.folder.done.on), 303)
    },
  )

  linkRoutes(app, deps, kinds.file)
  linkRoutes(app, deps, kinds.folder)
}

/** A link's settings (its page and its form) and turning it off, for links of one kind. */
function linkRoutes(app: RouteApp, { web, webSessions }: RouteDeps, kind: LinkKind): void {
  const paths = SHARE_PATHS[kind.kind]
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }

  /** The settings on a page of their own, with the form's problems. */
  async function settingsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    shareId: string,
    status: number,
    form?: FormState,
  ) {
    const { link, targetId, targetName } = await kind.get(sessionAccountId(request), shareId)
    const panel = sharePanel({
      target: { kind: kind.kind, id: targetId },
      csrfToken: csrfToken(request, reply),
      share: { ...link, publicUrl: kind.publicUrl(link.publicId) },
      timeZone: readerTimeZone(request),
      ...(form ? { form } : {}),
    })
    const back = kind.kind === 'file' ? FILE_PATHS.file(targetId) : FILE_PATHS.folder(targetId)
    const main = html`<div class="narrow stack">
<p><a href="${back}">← Back to ${targetName}</a></p>
<h1 id="page-title">Share settings of “${targetName}”</h1>
!${panel}
</div>`
    return web.send(reply, status, {
      title: `Share settings of ${targetName} · Coffer`,
      main,
      nav: appNav(request, reply, 'files'),
    })
  }

  app.get(
    paths.settings(':shareId'),
    { ...signedIn, schema: { hide: true, params: ShareParams } },
    (request, reply) => settingsPage(request, reply, request.params.shareId, 200),
  )

  app.post(
    paths.settings(':shareId'),
    { ...posted, schema: { hide: true, params: ShareParams } },
    async (request, reply) => {
      const { shareId } = request.params
      const form = refuseEndedDay(readSettings(request.body), 'expires', PAST_DAY)
      if (!form.ok)
        return settingsPage(request, reply, shareId, 400, {
          ...form,
          values: { ...form.values, password: '' },
        })
      try {
        const { targetId } = await kind.update(sessionAccountId(request), shareId, changesOf(form.value))
        return reply.redirect(withNotice(kind.panelOf(targetId), kind.done.saved), 303)
      } catch (error) {
        const { status, errors } = refusalOf(error, {
          fields: FIELD_OF,
          otherFields: 'form',
          messages: PAGE_MESSAGE,
        })
        return settingsPage(request, reply, shareId, status, { values: form.values, errors })
      }
    },
  )

  app.post(
    paths.disable(':shareId'),
    { ...posted, schema: { hide: true, params: ShareParams } },
    async (request, reply) => {
      const { targetId } = await kind.update(sessionAccountId(request), request.params.shareId, {
        isActive: false,
      })
      return reply.redirect(withNotice(kind.panelOf(targetId), kind.done.off), 303)
    },
  )
}
