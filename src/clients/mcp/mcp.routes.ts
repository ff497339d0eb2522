// The MCP server over streamable HTTP at /mcp, for AI agents that reach Coffer over the network: the tools of
// tools.ts, each request served by a server of its own (stateless: no session to keep, so any process of a
// fleet answers any request, and JSON answers rather than event streams).
//
// Authorization as the MCP specification asks of an HTTP server: /mcp is an OAuth protected resource of its
// own (RFC 9728 metadata at /.well-known/oauth-protected-resource/mcp, to which every 401 points), taking access
// tokens issued for it (resource PUBLIC_URL/mcp, RFC 8707) and refusing the API's, as the API refuses its;
// API keys open both (http/guard.ts). The tools call the API in this process (`app.inject`) with a credential
// of the request's principal (http/in-process-credentials.ts), so each is exactly what the API does: its
// validation, its errors and its scopes, checked by its own route schemas.
import type { FastifyInstance } from 'fastify'
import packageJson from '../../../package.json' with { type: 'json' }
import type { Routes } from '../../module.ts'
import type { Principal } from '../../platform/auth/principal.ts'
import { requireScopes } from '../../platform/http/auth.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { MCP_PATH } from '../../platform/public-urls.ts'
import { UPLOAD_LIMIT } from './limits.ts'

/** A message may carry a file of UPLOAD_LIMIT in base64 (a third more), and JSON around it. */
const BODY_LIMIT = Math.ceil((UPLOAD_LIMIT * 4) / 3) + 64 * 1024

/**
 * A message that may carry a file (larger than this, or of a length not announced) is held in memory several
 * times over while it is served (the body, the parsed text, the decoded bytes, the upload's request): about
 * 70 MiB for one of UPLOAD_LIMIT. So few are served at once: LARGE_PER_CREDENTIAL for one credential, and
 * LARGE_PER_PROCESS in all; past either, a 429 that says to send it again shortly.
 */
const LARGE_MESSAGE_BYTES = 1024 * 1024
const LARGE_PER_CREDENTIAL = 2
const LARGE_PER_PROCESS = 4

/** Large messages being served now, in all and per credential. */
class LargeMessages {
  #total = 0
  readonly #perCredential = new Map<string, number>()

  /** Takes a place for a message of `credentialId`, or says who has none left; `release` gives it back. */
  take(credentialId: string): { release(): void } | 'credential' | 'process' {
    const mine = this.#perCredential.get(credentialId) ?? 0
    if (mine >= LARGE_PER_CREDENTIAL) return 'credential'
    if (this.#total >= LARGE_PER_PROCESS) return 'process'
    this.#total++
    this.#perCredential.set(credentialId, mine + 1)
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        this.#total--
        const left = (this.#perCredential.get(credentialId) ?? 1) - 1
        if (left === 0) this.#perCredential.delete(credentialId)
        else this.#perCredential.set(credentialId, left)
      },
    }
  }
}

/**
 * The MCP SDK, the tools and Coffer's own SDK (with the @vercel/blob client), loaded by the first request to
 * /mcp rather than at start: they are a large part of what a server would otherwise compile as it starts, and
 * most servers never see an agent.
 */
const loadMcp = async () => {
  const [{ StreamableHTTPServerTransport }, { cofferMcpServer }, { Coffer }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./tools.ts'),
    import('../sdk/index.ts'),
  ])
  return { StreamableHTTPServerTransport, cofferMcpServer, Coffer }
}
let mcp: ReturnType<typeof loadMcp> | undefined

/** The SDK's fetch, answered by the app itself (`inject`): no socket, no second trip through a proxy. */
function injectingFetch(app: FastifyInstance): typeof fetch {
  return (async (input: Request) => {
    const url = new URL(input.url)
    const body = input.body ? Buffer.from(await input.arrayBuffer()) : undefined
    const response = await app.inject({
      method: input.method as 'GET',
      url: url.pathname + url.search,
      headers: Object.fromEntries(input.headers),
      ...(body ? { payload: body } : {}),
    })
    const headers = new Headers()
    for (const [name, value] of Object.entries(response.headers)) {
      for (const one of [value ?? []].flat()) headers.append(name, String(one))
    }
    const empty = response.statusCode === 204 || response.statusCode === 304 || input.method === 'HEAD'
    return new Response(empty ? null : new Uint8Array(response.rawPayload), {
      status: response.statusCode,
      headers,
    })
  }) as typeof fetch
}

export const mcpRoutes: Routes = async (app, { inProcess, urls }) => {
  const fetchInProcess = injectingFetch(app)
  const large = new LargeMessages()

  app.post(
    MCP_PATH,
    {
      // Any credential: each tool needs what its API operation needs.
      schema: { hide: true, security: requireScopes([]) },
      config: { protectedResource: 'mcp' },
      bodyLimit: BODY_LIMIT,
      // Before the body is read: after the guard, which knows the credential.
      onRequest: async (request, reply) => {
        const length = Number(request.headers['content-length'] ?? Number.NaN)
        if (length <= LARGE_MESSAGE_BYTES) return
        const place = large.take((request.principal as Principal).credentialId)
        if (typeof place === 'object') {
          reply.raw.once('close', place.release)
          return
        }
        // The body is read and dropped as it comes (not closed on: a client still sending would get a broken
        // pipe rather than this answer), so it costs no memory.
        return reply
          .status(429)
          .header('retry-after', 5)
          .send({
            jsonrpc: '2.0',
            error: {
              code: -32000,
              message:
                place === 'credential'
                  ? `Too many large messages at once: a credential may send ${LARGE_PER_CREDENTIAL} at a time (over ${LARGE_MESSAGE_BYTES / 1024 / 1024} MiB each, uploads say). Send it again in a few seconds.`
                  : 'The server is busy with large messages (uploads) from others. Send it again in a few seconds.',
            },
            id: null,
          })
      },
    },
    async (request, reply) => {
      mcp ??= loadMcp()
      const { StreamableHTTPServerTransport, cofferMcpServer, Coffer } = await mcp
      const { credential, end } = inProcess.issue({
        ...(request.principal as Principal),
        // The API's calls are this process's own; the audit log names the MCP client's address.
        address: clientAddress(request),
      })
      const coffer = new Coffer({
        url: urls.origin,
        credentials: { apiKey: credential },
        fetch: fetchInProcess,
        retries: 0,
      })
      const server = cofferMcpServer(coffer, packageJson.version)
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      })
      reply.hijack()
      reply.raw.on('close', () => {
        end()
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(request.raw, reply.raw, request.body)
    },
  )

  // Stateless: no stream to open or resume (GET), no session to end (DELETE).
  const onlyPost = {
    schema: { hide: true, security: requireScopes([]) },
    config: { protectedResource: 'mcp' as const },
  }
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: MCP_PATH,
      ...onlyPost,
      handler: async (_request, reply) =>
        reply
          .status(405)
          .header('allow', 'POST')
          .send({
            jsonrpc: '2.0',
            error: { code: -32000, message: 'Method not allowed: this MCP server is stateless, POST only.' },
            id: null,
          }),
    })
  }
}
