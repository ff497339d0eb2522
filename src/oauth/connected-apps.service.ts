// An account's connected applications: the OAuth clients it granted access, with the scopes granted for the
// API and when they last used it. Revoking one removes its grant with every code and token of it.

import { isScope, type Scope } from '../auth/scopes.ts'
import { notFound } from '../errors.ts'
import { displayedClientName } from './client-metadata.ts'
import type { OauthRecordsRepository } from './oauth-records.repository.ts'

export interface ConnectedApp {
  grantId: string
  name: string
  uri: string | undefined
  scopes: Scope[]
  lastUsedAt: number | null
}

interface GrantPayload {
  resources?: Record<string, string>
}

export class ConnectedAppsService {
  readonly #records: OauthRecordsRepository
  readonly #resource: string

  constructor(deps: { records: OauthRecordsRepository; apiResource: string }) {
    this.#records = deps.records
    this.#resource = deps.apiResource
  }

  async list(accountId: string): Promise<ConnectedApp[]> {
    const grants = await this.#records.grantsOf(accountId)
    const clients = await this.#records.clients([...new Set(grants.map((g) => g.clientId))])
    return grants.map((grant) => {
      const client = clients.get(grant.clientId)
      const granted = (grant.payload as GrantPayload).resources?.[this.#resource] ?? ''
      return {
        grantId: grant.grantId,
        name: displayedClientName(String(client?.client_name ?? grant.clientId)),
        uri: typeof client?.client_uri === 'string' ? client.client_uri : undefined,
        scopes: granted.split(' ').filter(isScope),
        lastUsedAt: grant.lastUsedAt,
      }
    })
  }

  /** Ends the application's access at once; another account's grant is not found. */
  async revoke(accountId: string, grantId: string): Promise<void> {
    const grants = await this.#records.grantsOf(accountId)
    if (!grants.some((grant) => grant.grantId === grantId)) throw notFound('Connected application')
    await this.#records.deleteGrant(grantId)
  }
}
