// What every admin route shares: the guard of every page (a 404 to anyone but an admin, who is then the actor
// the audit log names), the services, the navigation, and who is acting.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RouteApp, RouteDeps } from '../../module.ts'
import { actAs } from '../../platform/audit/audit-log.ts'
import { appNav } from '../accounts/web-sessions.ts'

/** What the admin's routes share: the service, the guard of every page, the navigation. */
export function adminKit(app: RouteApp, { services, web, webSessions }: RouteDeps) {
  /** After requireSession: anyone but an admin gets the 404 of a page that does not exist. */
  const requireAdmin = async (request: FastifyRequest, reply: FastifyReply) => {
    const account = request.webSession?.account
    if (account?.role !== 'admin') return web.sendError(reply, 404)
    // What an admin does here is the admin's doing, to another account: the audit log says so.
    actAs({ type: 'admin', id: account.id, name: account.email })
    return undefined
  }
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: [webSessions.requireSession, requireAdmin] }
  const posted = {
    config: page,
    preValidation: [webSessions.requireSession, requireAdmin, app.csrfProtection],
  }
  const nav = (request: FastifyRequest, reply: FastifyReply) => appNav(request, reply, 'admin')
  const actor = (request: FastifyRequest) => {
    const session = request.webSession
    if (!session) throw new Error('the admin pages need a session: requireSession runs first')
    return session.account
  }
  return { admin: services.admin, audit: services.audit, web, signedIn, posted, nav, actor }
}

export type Kit = ReturnType<typeof adminKit>
