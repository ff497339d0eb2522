// What the audit log records, by kind: what each means. The API's `kind` filter, its OpenAPI enum, the pages'
// wording and the tests that every kind is recorded read this one list. An entry's `details` hold what the
// change was (names, scopes, settings), never a secret: no key, password, link secret or token is ever written.

export const AUDIT_KINDS = {
  'account.created':
    'An account was made: by the setup link, an invitation, sign-up, single sign-on or an admin.',
  'account.signed_in':
    'Someone signed in to the account (`details.method`: password, sso, invitation, setup, sign_up).',
  'account.sign_in_failed':
    'A sign-in was refused (`details.reason`); with no account for the address tried, the entry belongs to none.',
  'account.password_changed': 'The account’s password was changed by its owner, or set by the admin command.',
  'account.password_reset': 'The account’s password was set with a password-reset link.',
  'account.password_reset_sent': 'An admin sent the account a password-reset link.',
  'account.role_changed': 'An admin changed the account’s role (`details.from`, `details.to`).',
  'account.disabled':
    'An admin disabled the account: its sessions, keys and OAuth grants ended, its links answer 404.',
  'account.enabled': 'An admin enabled the account again.',
  'account.deleted': 'An admin deleted the account: its files go through the purge, then the account.',
  'account.quota_changed': 'An admin changed the account’s storage quota or largest file.',
  'invitation.created':
    'An admin made an invitation (`details.email` when it is for one address, `details.role`).',
  'invitation.revoked': 'An admin revoked an unused invitation.',
  'key.created': 'An API key was made (`details.name`, `details.scopes`).',
  'key.revoked': 'An API key was revoked.',
  'oauth.granted': 'An application was allowed to use the account (`details.client`, `details.scopes`).',
  'oauth.revoked': 'An application’s access was revoked (connected applications).',
  'share.created': 'A share link was made for a file, or a disabled or expired one reactivated.',
  'share.changed': 'A share link’s settings were changed (`details.changed` names them).',
  'share.deleted': 'A share link was deleted (disabled).',
  'folder_share.created': 'A folder link was made, or a disabled or expired one reactivated.',
  'folder_share.changed': 'A folder link’s settings were changed (`details.changed` names them).',
  'folder_share.deleted': 'A folder link was deleted (disabled).',
  'file.trashed': 'A file was deleted into the trash.',
  'file.restored': 'A file came back from the trash.',
  'file.deleted':
    'A file was deleted for good (emptied from the trash, purged, or deleted with the trash off).',
  'request.created': 'A file request was made.',
  'request.changed': 'A file request’s settings were changed (`details.changed` names them).',
  'request.closed':
    'A file request stopped accepting files (`details.reason`: disabled, maxFiles, deadline).',
  'request.deleted': 'A file request was deleted.',
  'webhook.created': 'A webhook endpoint was made.',
  'webhook.changed': 'A webhook endpoint was changed, or its signing secret rotated.',
  'webhook.deleted': 'A webhook endpoint was deleted.',
} as const

export type AuditKind = keyof typeof AUDIT_KINDS

export const ALL_AUDIT_KINDS = Object.keys(AUDIT_KINDS) as AuditKind[]

/** The families of kinds (`share` for `share.*`): the `kind` filter takes a kind or a family. */
export const AUDIT_KIND_FAMILIES = [...new Set(ALL_AUDIT_KINDS.map((kind) => kind.split('.')[0] as string))]

export function isAuditKind(value: string): value is AuditKind {
  return Object.hasOwn(AUDIT_KINDS, value)
}
