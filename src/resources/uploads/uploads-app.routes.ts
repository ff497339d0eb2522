// The web app's uploads (files-app.client.ts), authorized by the owner's session and its CSRF token (sent in
// the X-CSRF-Token header), never by an API key in the page: prepare uploads into a folder, follow them, cancel
// them. The bytes go to the blob endpoint with the @vercel/blob client exactly as any client's do, each upload
// authorized by its own grant. A script calls these, so refusals come in the API's JSON envelope, which the
// page shows beside the file.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { sessionAccountId } from '../accounts/web-sessions.ts'
import { PrepareUploadBody, serializeGrant } from './uploads.schemas.ts'

const IntentIds = Type.Object(
  { intentIds: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
)

export const uploadsAppRoutes: Routes = async (app, { services, webSessions }) => {
  const { uploads } = services
  const posted = { preValidation: [webSessions.requireSession, app.csrfProtection] }

  app.post(
    '/uploads',
    { ...posted, schema: { hide: true, body: PrepareUploadBody } },
    async (request, reply) => {
      const grants = await uploads.prepare(sessionAccountId(request), request.body)
      return reply.status(201).send({ data: { uploads: grants.map(serializeGrant) } })
    },
  )

  app.post('/uploads/status', { ...posted, schema: { hide: true, body: IntentIds } }, async (request) => ({
    data: await uploads.statuses(sessionAccountId(request), request.body.intentIds),
  }))

  app.post(
    '/uploads/cancel',
    { ...posted, schema: { hide: true, body: IntentIds } },
    async (request, reply) => {
      await uploads.cancel(sessionAccountId(request), request.body.intentIds)
      return reply.status(204).send()
    },
  )
}
