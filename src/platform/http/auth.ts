// Bearer authentication and scope checks for /api/v1. The scopes an operation needs are read from its
// own OpenAPI `security` list, so the documentation and the enforcement cannot drift apart: each entry
// of the list is an alternative, and the credential needs every scope of one of them.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { actAs } from '../audit/audit-log.ts'
import type { Principal } from '../auth/principal.ts'
import type { Scope } from '../auth/scopes.ts'
import { AppError } from '../errors.ts'

export type Authenticator = (bearer: string) => Promise<Principal | undefined>

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once a bearer credential has been verified. */
    principal: Principal | undefined
    /** Why the credential was refused, when one was sent and refused. */
    credentialProblem: string | undefined
  }
}

export const BEARER_SECURITY = 'bearer'

export type SecurityRequirement = Record<string, string[]>

/** A route's security list: `[{ bearer: ['folders:read'] }, { bearer: ['files:read'] }]` = either scope. */
export function requireScopes(...alternatives: Scope[][]): SecurityRequirement[] {
  return alternatives.map((scopes) => ({ [BEARER_SECURITY]: scopes }))
}

/**
 * A route's security list, from its schema; undefined for a public route, which declares none or, as OpenAPI
 * spells "no credential needed", an empty list.
 */
export function routeSecurity(schema: unknown): SecurityRequirement[] | undefined {
  const security = (schema as { security?: SecurityRequirement[] } | undefined)?.security
  return security && security.length > 0 ? security : undefined
}

/**
 * The start of every `WWW-Authenticate` challenge: the scheme, and where the API's protected resource
 * metadata is (RFC 9728 §5.1), from which a client finds the authorization server.
 */
export function bearerChallenge(resourceMetadataUrl: string): string {
  return `Bearer realm="coffer", resource_metadata="${resourceMetadataUrl}"`
}

/** RFC 6750 §3.1: a request that sent no credential is told the scheme only, without an error code. */
function unauthorized(
  request: FastifyRequest,
  reply: FastifyReply,
  challenge: string,
  message: string,
): AppError {
  const sent = request.headers.authorization !== undefined
  reply.header('www-authenticate', sent ? `${challenge}, error="invalid_token"` : challenge)
  return new AppError('unauthorized', message)
}

/** Parses `Authorization: Bearer <credential>`; the value is never logged or echoed. */
function bearerOf(request: FastifyRequest): string | undefined | null {
  const header = request.headers.authorization
  if (header === undefined) return undefined
  const match = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(header.trim())
  return match?.[1] ?? null
}

export function decorateAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', undefined)
  app.decorateRequest('credentialProblem', undefined)
}

/**
 * Identifies the credential, without refusing: the rate limiter keys on the credential, and must also see
 * requests with bad credentials (keyed by address) so that guessing keys is throttled too.
 */
export async function identify(request: FastifyRequest, authenticate: Authenticator): Promise<void> {
  const bearer = bearerOf(request)
  if (bearer === undefined) {
    request.credentialProblem = 'Missing credential: send "Authorization: Bearer <API key or access token>".'
  } else if (bearer === null) {
    request.credentialProblem = 'Malformed Authorization header: expected "Bearer <credential>".'
  } else {
    request.principal = await authenticate(bearer)
    if (request.principal) actAs(request.principal.actor, request.principal.address)
    else request.credentialProblem = 'The credential is unknown, revoked or expired.'
  }
}

/** Refuses an unauthenticated request (401) and one lacking a scope the route needs (403). */
export function authorize(
  request: FastifyRequest,
  reply: FastifyReply,
  security: SecurityRequirement[],
  challenge: string,
): void {
  const principal = request.principal
  if (!principal) {
    throw unauthorized(request, reply, challenge, request.credentialProblem ?? 'Authentication required.')
  }
  const allowed = security.some((alternative) =>
    (alternative[BEARER_SECURITY] ?? []).every((scope) => principal.scopes.has(scope as Scope)),
  )
  if (!allowed) {
    const needed = security.map((a) => (a[BEARER_SECURITY] ?? []).join(' and ')).join(' or ')
    const firstAlternative = (security[0]?.[BEARER_SECURITY] ?? []).join(' ')
    reply.header('www-authenticate', `${challenge}, error="insufficient_scope", scope="${firstAlternative}"`)
    throw new AppError('insufficient_scope', `This operation needs the scope ${needed}.`)
  }
}

/** The authenticated account's id; only call from routes that declare security. */
export function accountOf(request: FastifyRequest): string {
  if (!request.principal) throw new AppError('unauthorized', 'Authentication required.')
  return request.principal.accountId
}
