// An audit entry's actor and details in plain words, as the coffer command and the MCP tools show them (the pages
// draw their own, with markup). Shared, so the clients read it without the server's modules.

/** Who acted, as the API answers it (`AuditEntry.actor`). */
export interface ActorOfEntry {
  type: string
  id: string | null
  name: string | null
}

/** `key "deploy bot"`, `admin ada@example.org`, `Coffer`... */
export function actorWords(actor: ActorOfEntry): string {
  switch (actor.type) {
    case 'account':
      return actor.name ?? actor.id ?? 'the account'
    case 'key':
      return `key "${actor.name ?? actor.id ?? ''}"`
    case 'oauth_client':
      return `app "${actor.name ?? actor.id ?? ''}"`
    case 'admin':
      return `admin ${actor.name ?? actor.id ?? ''}`
    case 'admin_command':
      return 'the admin command'
    case 'visitor':
      return 'a visitor'
    default:
      return 'Coffer'
  }
}

/** `name=report.pdf scopes=files:read,files:write`: the details that have a value. */
export function detailWords(details: Record<string, unknown>): string {
  return Object.entries(details)
    .filter(([, value]) => value !== null && value !== '')
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : String(value)}`)
    .join(' ')
}
