// Who a request acts for, once its credential is verified: the same for every kind of credential.
import type { Actor } from '../audit/audit-log.ts'
import type { Scope } from './scopes.ts'

export interface Principal {
  accountId: string
  scopes: ReadonlySet<Scope>
  /** Identifies the credential (not its secret), e.g. for rate limiting. */
  credentialId: string
  /** Who the audit log names for what the request does: the key, or the OAuth application. */
  actor: Actor
  /**
   * The client's address, for a credential issued in this process for another request (the MCP server's
   * calls to the API): that request's, not this process's own.
   */
  address?: string
}
