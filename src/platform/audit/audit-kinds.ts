// What the audit log records, by kind: what the pages call it, and what it means (the API's description). The
// API's `kind` filter, its description, the capability index and the pages' wording read this one list. An
// entry's `details` hold what the change was (names, scopes, settings, a reason), never a secret: no key,
// password, link secret or token is ever written.

export const AUDIT_KINDS = {
  'account.created': {
    label: 'Account created',
    about: 'An account was made: by the setup link, an invitation, sign-up, single sign-on or an admin.',
  },
  'account.signed_in': {
    label: 'Signed in',
    about: 'Someone signed in to the account (`details.method`: password, sso, invitation, setup, sign_up).',
  },
  'account.sign_in_failed': {
    label: 'Sign-in refused',
    about:
      'A sign-in was refused (`details.reason`: wrong_password, unknown_email, disabled, throttled (recorded once a minute per client), password_not_allowed (single sign-on only), other_identity (single sign-on: the address belongs to another identity)); with no account for the address tried, the entry belongs to none and says the address.',
  },
  'account.password_changed': {
    label: 'Password changed',
    about: 'The account’s password was changed by its owner, or set by the admin command.',
  },
  'account.password_reset': {
    label: 'Password reset by link',
    about: 'The account’s password was set with a password-reset link.',
  },
  'account.password_reset_sent': {
    label: 'Password-reset link sent',
    about: 'An admin sent the account a password-reset link.',
  },
  'account.role_changed': {
    label: 'Role changed',
    about: 'An admin changed the account’s role (`details.from`, `details.to`).',
  },
  'account.disabled': {
    label: 'Account disabled',
    about: 'An admin disabled the account: its sessions, keys and OAuth grants ended, its links answer 404.',
  },
  'account.enabled': {
    label: 'Account enabled',
    about: 'An admin enabled the account again.',
  },
  'account.deleted': {
    label: 'Account deleted',
    about: 'An admin deleted the account: its files go through the purge, then the account.',
  },
  'account.quota_changed': {
    label: 'Storage limits changed',
    about: 'An admin changed the account’s storage quota or largest file.',
  },
  'invitation.created': {
    label: 'Invitation made',
    about: 'An admin made an invitation (`details.email` when it is for one address, `details.role`).',
  },
  'invitation.revoked': {
    label: 'Invitation revoked',
    about: 'An admin revoked an unused invitation.',
  },
  'key.created': {
    label: 'API key made',
    about: 'An API key was made (`details.name`, `details.scopes`).',
  },
  'key.revoked': {
    label: 'API key revoked',
    about: 'An API key was revoked.',
  },
  'oauth.granted': {
    label: 'Application allowed',
    about: 'An application was allowed to use the account (`details.client`, `details.scopes`).',
  },
  'oauth.revoked': {
    label: 'Application’s access revoked',
    about:
      'An application’s access ended: revoked by the account (connected applications), or by the application itself (it revoked its token, or the server ended the grant when one of its codes or refresh tokens was used twice: `details.reason` replayed).',
  },
  'share.created': {
    label: 'Share link made',
    about: 'A share link was made for a file, or a disabled or expired one reactivated.',
  },
  'share.changed': {
    label: 'Share link changed',
    about: 'A share link’s settings were changed (`details.changed` names them).',
  },
  'share.deleted': {
    label: 'Share link deleted',
    about: 'A share link was deleted (disabled).',
  },
  'folder_share.created': {
    label: 'Folder link made',
    about: 'A folder link was made, or a disabled or expired one reactivated.',
  },
  'folder_share.changed': {
    label: 'Folder link changed',
    about: 'A folder link’s settings were changed (`details.changed` names them).',
  },
  'folder_share.deleted': {
    label: 'Folder link deleted',
    about: 'A folder link was deleted: disabled, or gone with its folder (`details.reason`: folder_deleted).',
  },
  'file.trashed': {
    label: 'File moved to the trash',
    about: 'A file was deleted into the trash.',
  },
  'file.restored': {
    label: 'File restored',
    about: 'A file came back from the trash.',
  },
  'file.deleted': {
    label: 'File deleted for good',
    about: 'A file was deleted for good (emptied from the trash, purged, or deleted with the trash off).',
  },
  'request.created': {
    label: 'File request made',
    about: 'A file request was made.',
  },
  'request.changed': {
    label: 'File request changed',
    about: 'A file request’s settings were changed (`details.changed` names them).',
  },
  'request.closed': {
    label: 'File request closed',
    about: 'A file request stopped accepting files (`details.reason`: disabled, maxFiles, deadline).',
  },
  'webhook.created': {
    label: 'Webhook made',
    about: 'A webhook endpoint was made.',
  },
  'webhook.changed': {
    label: 'Webhook changed',
    about:
      'A webhook endpoint was changed (`details.changed` names what), its signing secret rotated, or it was turned off by Coffer after its deliveries failed for days (`details.reason`: failing).',
  },
  'webhook.deleted': {
    label: 'Webhook deleted',
    about: 'A webhook endpoint was deleted.',
  },
} as const

export type AuditKind = keyof typeof AUDIT_KINDS

export const ALL_AUDIT_KINDS = Object.keys(AUDIT_KINDS) as AuditKind[]

/** The families of kinds (`share` for `share.*`): the `kind` filter takes a kind or a family. */
export const AUDIT_KIND_FAMILIES = [...new Set(ALL_AUDIT_KINDS.map((kind) => kind.split('.')[0] as string))]

export function isAuditKind(value: string): value is AuditKind {
  return Object.hasOwn(AUDIT_KINDS, value)
}
