// A protected resource's side of OAuth (the API's, or the MCP server's): the principal an access token stands
// for. A token counts only while it is unexpired, for this resource (its audience), and its grant still exists: revoking the grant (connected apps), a
// replayed code or refresh token, or disabling the account ends it on the next request, in any process (the
// token is kept in memory as keys are: see OauthRecordsRepository.accessToken). The rate limiter keys
// it by its grant, so refreshing a token does not reset a client's limit.
import type { Principal } from '../../platform/auth/principal.ts'
import { isScope, type Scope } from '../../platform/auth/scopes.ts'
import { displayedClientName } from './client-metadata.ts'
import type { OauthPayload, OauthRecordsRepository, StoredAccessToken } from './oauth-records.repository.ts'

// Writing a grant's last use on every request would turn each read into a write; once a minute is enough.
const LAST_USED_RESOLUTION_MS = 60_000

export class AccessTokensService {
  readonly #records: OauthRecordsRepository
  readonly #resource: string

  /** `resource`: the audience this service accepts tokens of (the API's, or the MCP server's). */
  constructor(deps: { records: OauthRecordsRepository; resource: string }) {
    this.#records = deps.records
    this.#resource = deps.resource
  }

  async authenticate(token: string): Promise<Principal | undefined> {
    const found = await this.#records.accessToken(token)
    if (!found) return undefined
    let principal = this.#principals.get(found)
    if (principal === undefined) {
      principal = await this.#principalOf(found.payload)
      this.#principals.set(found, principal)
    }
    if (principal === null) return undefined
    const now = Date.now()
    if (found.grantLastUsedAt === null || now - found.grantLastUsedAt > LAST_USED_RESOLUTION_MS) {
      await this.#records.recordGrantUse(found, now)
    }
    return principal
  }

  /**
   * Who a token acts for, made once per token kept in memory (the application's name read then, with it);
   * null for a token of another audience.
   */
  readonly #principals = new WeakMap<StoredAccessToken, Principal | null>()

  async #principalOf(payload: OauthPayload): Promise<Principal | null> {
    const audience = payload.aud
    const audiences = Array.isArray(audience) ? audience : [audience]
    if (audiences.length !== 1 || audiences[0] !== this.#resource) return null
    if (typeof payload.accountId !== 'string' || typeof payload.grantId !== 'string') return null
    const scopes = String(payload.scope ?? '')
      .split(' ')
      .filter((scope): scope is Scope => isScope(scope))
    const clientId = typeof payload.clientId === 'string' ? payload.clientId : null
    // The audit log names the application as its owner knows it (connected apps show the same name).
    const client = clientId === null ? undefined : await this.#records.client(clientId)
    const name = clientId === null ? null : displayedClientName(clientId, client?.client_name)
    return {
      accountId: payload.accountId,
      scopes: new Set(scopes),
      credentialId: `grant:${payload.grantId}`,
      actor: { type: 'oauth_client', id: clientId, name },
    }
  }
}
