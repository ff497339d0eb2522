// Every scope a credential can carry, with what it grants; API keys and OAuth tokens carry the same ones.
export const SCOPES = {
  'files:read': 'View files, their contents and metadata',
  'files:write': 'Upload, rename, move and delete files',
  'folders:read': 'View folders and their resource counts',
  'folders:write': 'Create, rename and delete folders',
  'shares:read': 'View share links',
  'shares:write': 'Create, update and disable share links',
  'requests:read': 'View file requests and submissions',
  'requests:write': 'Create, update, move and disable file requests',
  'analytics:read': 'View share analytics',
  'webhooks:read': 'View webhook endpoints and their deliveries',
  'webhooks:write': 'Create, change and delete webhook endpoints, and send test events',
  'audit:read': "Read the account's activity: sign-ins, keys, links, deletions and other changes",
} as const

export type Scope = keyof typeof SCOPES

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[]

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value)
}

/** Parses a comma- or space-separated scope list; throws on an unknown name. */
export function parseScopes(list: string): Scope[] {
  const names = list.split(/[\s,]+/).filter(Boolean)
  const unknown = names.filter((n) => !isScope(n))
  if (unknown.length > 0) {
    throw new Error(`unknown scope ${unknown.join(', ')}; known scopes: ${ALL_SCOPES.join(', ')}`)
  }
  return [...new Set(names as Scope[])]
}
