// Who a request acts for, once its credential is verified: the same for every kind of credential.
import type { Scope } from './scopes.ts'

export interface Principal {
  accountId: string
  scopes: ReadonlySet<Scope>
  /** Identifies the credential (not its secret), e.g. for rate limiting. */
  credentialId: string
}
