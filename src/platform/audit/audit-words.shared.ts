// An audit entry's actor and details in plain words: the pages say who acted with it (after "by"), and the coffer
// command and the MCP tools show both. Shared, so the clients read it without the server's modules.

/** Who acted, as the API answers it (`AuditEntry.actor`). */
export interface ActorOfEntry {
  type: string
  id: string | null
  name: string | null
}

/** `API key "deploy bot"`, `admin ada@example.org`, `Coffer, on its own`... */
export function actorWords(actor: ActorOfEntry): string {
  switch (actor.type) {
    case 'account':
      return actor.name ?? actor.id ?? 'the account'
    case 'key':
      return `API key "${actor.name ?? actor.id ?? ''}"`
    case 'oauth_client':
      return `the application "${actor.name ?? actor.id ?? ''}"`
    case 'admin':
      return `admin ${actor.name ?? actor.id ?? ''}`
    case 'admin_command':
      return 'the admin command on the server'
    case 'visitor':
      return 'someone without an account'
    default:
      return 'Coffer, on its own'
  }
}

/** `name=report.pdf scopes=files:read,files:write`: the details that have a value. */
export function detailWords(details: Record<string, unknown>): string {
  return Object.entries(details)
    .filter(([, value]) => value !== null && value !== '')
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : String(value)}`)
    .join(' ')
}
