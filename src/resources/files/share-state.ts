// A share link's state, decided here and only here. Every surface shows this result: the API's `state` (and
// `isActive`, which it derives), the app's badges, the public page's answer, the `coffer` command, MCP, the
// payloads of webhooks and the analytics. `shareOpensNow` (shares.repository.ts) is the same rule in SQL, for
// counting links in the database (analytics' active links); test/states.test.ts holds the two to each other.
// It lives with files because every file carries its link's state (the API's File, the app's lists); the
// shares resource builds on files.

export const SHARE_STATES = ['active', 'disabled', 'expired', 'exhausted'] as const

/**
 * - `active`: the link opens.
 * - `disabled`: its owner turned it off.
 * - `expired`: its `expiresAt` has passed.
 * - `exhausted`: its downloads reached `maxDownloads`.
 */
export type ShareState = (typeof SHARE_STATES)[number]

/** What the state is made of: the stored switch, the expiry, and the download count and limit. */
export interface ShareStateFields {
  /** The owner's switch (the `is_active` column): false once the link is disabled. */
  enabled: boolean
  expiresAt: number | null
  downloadCount: number
  maxDownloads: number | null
}

/**
 * The first reason in this order that holds: disabled (the owner's choice, whatever else is true), expired,
 * exhausted; otherwise active.
 */
export function shareStateOf(share: ShareStateFields, now = Date.now()): ShareState {
  if (!share.enabled) return 'disabled'
  if (share.expiresAt !== null && share.expiresAt <= now) return 'expired'
  if (share.maxDownloads !== null && share.downloadCount >= share.maxDownloads) return 'exhausted'
  return 'active'
}

/** The state of a row of `shares` (or of the columns of one, joined under other names). */
export function shareStateOfRow(
  row: {
    is_active: boolean | number
    expires_at: number | null
    download_count: number
    max_downloads: number | null
  },
  now = Date.now(),
): ShareState {
  return shareStateOf(
    {
      enabled: Boolean(row.is_active),
      expiresAt: row.expires_at === null ? null : Number(row.expires_at),
      downloadCount: Number(row.download_count),
      maxDownloads: row.max_downloads === null ? null : Number(row.max_downloads),
    },
    now,
  )
}

/**
 * The API's `isActive` (DESIGN.md): false once the link is disabled or expired. An exhausted link stays active
 * in this sense: raising its limit opens it again, and a download under way may fetch the rest of its bytes.
 */
export function isActiveState(state: ShareState): boolean {
  return state === 'active' || state === 'exhausted'
}
