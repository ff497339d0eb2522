// An account's connected applications: the OAuth clients it granted access, with the scopes granted for the
// API or the MCP server and when they last used it. Revoking one removes its grant with every code and token of it.

import { type Actor, type AuditLog, SYSTEM } from '../../platform/audit/audit-log.ts'
import { isScope, type Scope } from '../../platform/auth/scopes.ts'
import type { Executor, Transactor } from '../../platform/db/database.ts'
import { notFound } from '../../platform/errors.ts'
import { displayedClientName, displayedClientText } from './client-metadata.ts'
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
  readonly #transaction: Transactor
  readonly #audit: AuditLog

  /**
   * `resources`: those whose granted scopes are shown (the API's and the MCP server's); `audit`: where grants
   * made and revoked are recorded, in the transaction of each.
   */
  constructor(deps: {
    records: OauthRecordsRepository
    resources: string[]
    transaction: Transactor
    audit: AuditLog
  }) {
    this.#records = deps.records
    this.#resources = deps.resources
    this.#transaction = deps.transaction
    this.#audit = deps.audit
  }

  /** The application's name as its registration gives it (the people's name for it), else its client ID. */
  async clientName(clientId: string, executor?: Executor): Promise<string> {
    const client = (await this.#records.clients([clientId], executor)).get(clientId)
    return displayedClientName(clientId, client?.client_name)
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
        name: displayedClientName(grant.clientId, client?.client_name),
        uri: typeof client?.client_uri === 'string' ? displayedClientText(client.client_uri) : undefined,
        scopes: [...granted].filter(isScope),
        lastUsedAt: grant.lastUsedAt,
      }
    })
  }

  /**
   * Saves the grant the account gave on the consent page (or for a device's code): `save` is the provider's own
   * save, run with the removal of the grant it replaces (`replaces`), in the transaction that records it.
   */
  async grant(input: {
    accountId: string
    clientId: string
    scopes: Scope[]
    replaces: string | undefined
    save: () => Promise<string>
  }): Promise<string> {
    const client = await this.clientName(input.clientId)
    return this.#transaction((trx) =>
      this.#records.within(trx, async () => {
        // The grant row alone: the interaction under way is filed under it too, and its tokens end with it.
        if (input.replaces) await this.#records.destroy('Grant', input.replaces, trx)
        const grantId = await input.save()
        await this.#audit.record(trx, {
          accountId: input.accountId,
          kind: 'oauth.granted',
          subjectId: grantId,
          details: { client, clientId: input.clientId, scopes: input.scopes },
        })
        return grantId
      }),
    )
  }

  /** Ends the application's access at once; another account's grant is not found. */
  async revoke(accountId: string, grantId: string): Promise<void> {
    const grants = await this.#records.grantsOf(accountId)
    const grant = grants.find((each) => each.grantId === grantId)
    if (!grant) throw notFound('Connected application')
    await this.#revoke(grantId, { by: 'account', client: await this.clientName(grant.clientId) })
  }

  /**
   * The provider ends a grant (an application revoked its refresh token, RFC 7009): recorded as the
   * application's doing.
   */
  async revokedByClient(grantId: string): Promise<void> {
    await this.#revoke(grantId, { by: 'client' })
  }

  /**
   * The provider found one of the grant's codes or refresh tokens used twice: whoever used it may have stolen it,
   * so the grant ends with every code and token it issued, recorded as the server's doing (`reason`: replayed).
   */
  async revokedOnReplay(grantId: string): Promise<void> {
    await this.#revoke(grantId, { by: 'server' })
  }

  /**
   * Removes the grant and records it, as the account's doing (with its codes and tokens), the application's
   * (through the provider, which removes the codes and tokens itself meanwhile) or the server's.
   */
  async #revoke(
    grantId: string,
    how: { by: 'account'; client: string } | { by: 'client' } | { by: 'server' },
  ): Promise<void> {
    await this.#transaction(async (trx) => {
      const ended = await this.#records.deleteGrant(grantId, trx, how.by === 'client')
      // Gone meanwhile (revoked twice at once): the other revocation recorded it.
      if (!ended) return
      const name = how.by === 'account' ? how.client : await this.clientName(ended.clientId, trx)
      const actor: Actor | undefined =
        how.by === 'client'
          ? { type: 'oauth_client', id: ended.clientId, name }
          : how.by === 'server'
            ? SYSTEM
            : undefined
      await this.#audit.record(trx, {
        accountId: ended.accountId,
        kind: 'oauth.revoked',
        subjectId: grantId,
        details: {
          client: name,
          clientId: ended.clientId,
          ...(how.by === 'server' ? { reason: 'replayed' } : {}),
        },
        ...(actor ? { actor } : {}),
      })
    })
  }
}
