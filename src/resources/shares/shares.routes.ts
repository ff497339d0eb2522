import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, dateTimeOf, ERROR_RESPONSES, IdParam, List, PageQuery } from '../../platform/http/schemas.ts'
import { CreateShareBody, serializeShare, serializeShareWithFile, UpdateShareBody } from './shares.schemas.ts'

const READ = requireScopes(['shares:read'])
const WRITE = requireScopes(['shares:write'])
const tags = ['shares']
const ShareParams = IdParam('shareId')

export const sharesRoutes: Routes = async (app, deps) => {
  for (const routes of [shareListRoutes, oneShareRoutes]) await routes(app, deps)
}

/** The account's share links: the list, a new one. */
async function shareListRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { shares } = services
  app.get(
    '/shares',
    {
      schema: {
        tags,
        operationId: 'listShares',
        summary: 'List share links',
        description: 'The share links of the account with their files, newest first.',
        security: READ,
        querystring: Type.Object(PageQuery(25), { additionalProperties: false }),
        response: { 200: List(Type.Ref('ShareWithFile')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await shares.list(accountOf(request), { cursor, limit })
      return {
        data: page.items.map((share) => serializeShareWithFile(share, urls)),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.post(
    '/shares',
    {
      schema: {
        tags,
        operationId: 'createShare',
        summary: 'Create or reactivate a share link',
        description: `A file has at most one share link. With none yet, this creates an active one. If the file's link is
disabled or expired, this reactivates it, keeping its public URL and counts, with the \`expiresAt\` of this body (no
expiry when omitted). If the link is active, this changes nothing and returns it as it is; change its expiry with
PATCH. The answer is 201 in all three cases. \`expiresAt\` must be in the future (400 otherwise). A file that does not
exist or belongs to another account is a 404.

Coffer extension: \`password\` and \`maxDownloads\` protect the link. They apply when the link is created or
reactivated (a reactivated link keeps those it had when they are omitted); an active link is returned unchanged, so
change them with PATCH.`,
        security: WRITE,
        body: CreateShareBody,
        response: { 201: Data(Type.Ref('Share')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { fileId, expiresAt, password, maxDownloads } = request.body
      const share = await shares.create(accountOf(request), fileId, {
        expiresAt: dateTimeOf(expiresAt, 'expiresAt'),
        password,
        maxDownloads,
      })
      return reply.status(201).send({ data: serializeShare(share, urls) })
    },
  )
}

/** One link: read, its settings changed. */
async function oneShareRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { shares } = services
  app.get(
    '/shares/:shareId',
    {
      schema: {
        tags,
        operationId: 'getShare',
        summary: 'Get a share link',
        security: READ,
        params: ShareParams,
        response: { 200: Data(Type.Ref('ShareWithFile')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeShareWithFile(await shares.get(accountOf(request), request.params.shareId), urls),
    }),
  )

  app.patch(
    '/shares/:shareId',
    {
      schema: {
        tags,
        operationId: 'updateShare',
        summary: 'Update a share link',
        description: `Enables or disables the link (\`isActive\`) and sets or clears its expiry (\`expiresAt\`); at least
one of them. A new \`expiresAt\` must be in the future (400 otherwise); null removes the expiry. \`isActive: true\` on a
link whose stored expiry has passed is a 409 unless the same body sets a new \`expiresAt\`. In responses \`isActive\` is
the effective state: false once \`expiresAt\` has passed.

Coffer extension: \`password\` sets, changes (which asks every recipient for the new one) or, with null, removes the
link's password; \`maxDownloads\` sets or, with null, removes its download limit.`,
        security: WRITE,
        params: ShareParams,
        body: UpdateShareBody,
        response: { 200: Data(Type.Ref('Share')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { isActive, expiresAt, password, maxDownloads } = request.body
      const share = await shares.update(accountOf(request), request.params.shareId, {
        isActive,
        expiresAt: dateTimeOf(expiresAt, 'expiresAt'),
        password,
        maxDownloads,
      })
      return { data: serializeShare(share, urls) }
    },
  )
}
