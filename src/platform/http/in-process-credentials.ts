// Credentials for requests a route makes to the API in the same process (`app.inject`) on behalf of the
// principal it authenticated: the MCP server's tools call the API this way, so that each operation is what
// the API does, its scopes checked by its own route schema. A credential is 32 random bytes, lives in this
// process's memory only for the length of the request that made it, and never leaves the process.
import { randomBytes } from 'node:crypto'
import type { Principal } from '../auth/principal.ts'

const PREFIX = 'coffer_inprocess_'

export class InProcessCredentials {
  readonly #principals = new Map<string, Principal>()

  /** A credential for `principal`, until `end` is called. */
  issue(principal: Principal): { credential: string; end(): void } {
    const credential = PREFIX + randomBytes(32).toString('base64url')
    this.#principals.set(credential, principal)
    return { credential, end: () => this.#principals.delete(credential) }
  }

  /** The principal of an in-process credential; undefined for any other bearer. */
  principalOf(bearer: string): Principal | undefined {
    return bearer.startsWith(PREFIX) ? this.#principals.get(bearer) : undefined
  }
}
