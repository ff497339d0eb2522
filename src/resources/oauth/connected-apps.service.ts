// An account's connected applications: the OAuth clients it granted access, with the scopes granted for the
// API or the MCP server and when they last used it. Revoking one removes its grant with every code and token of it.

import { isScope, type Scope } from '../../platform/auth/scopes.ts'
import { notFound } from '../../platform/errors.ts'
import { displayedClientText } from './client-metadata.ts'
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
  readonly #resources: string[]

  /** `resources`: those whose granted scopes are shown (the API's and the MCP server's). */
  constructor(deps: { records: OauthRecordsRepository; resources: string[] }) {
    this.#records = deps.records
    this.#resources = deps.resources
  }

  async list(accountId: string): Promise<ConnectedApp[]> {
    const grants = await this.#records.grantsOf(accountId)
    const clients = await this.#records.clients([...new Set(grants.map((g) => g.clientId))])
    return grants.map((grant) => {
      const client = clients.get(grant.clientId)
      const byResource = (grant.payload as GrantPayload).resources ?? {}
      const granted = new Set(this.#resources.flatMap((resource) => (byResource[resource] ?? '').split(' ')))
      return {
        grantId: grant.grantId,
        name: displayedClientText(String(client?.client_name ?? grant.clientId)),
        uri: typeof client?.client_uri === 'string' ? displayedClientText(client.client_uri) : undefined,
        scopes: [...granted].filter(isScope),
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
