// Who a request acts as and where it comes from, for the audit log (platform/audit): kept for the request's
// whole life by @fastify/request-context (an AsyncLocalStorage carried across Fastify's hooks and the body's
// parsing), so that a service recording an entry deep in a transaction learns them without being passed them.
import { fastifyRequestContext } from '@fastify/request-context'
import type { FastifyInstance } from 'fastify'
import { VISITOR } from '../audit/audit-log.ts'
import { clientAddress } from './client-address.ts'

/**
 * Gives every request its audit context: a visitor at the client's address until its credential or session says
 * who it is. Registered before every other hook, so that each sees it.
 */
export async function registerAuditContext(app: FastifyInstance): Promise<void> {
  await app.register(fastifyRequestContext, {
    defaultStoreValues: (request) => ({ audit: { actor: VISITOR, address: clientAddress(request) } }),
  })
}
