// The bounds of a share link's settings beyond the contract, for the server's schemas and forms and for the
// clients that check them before asking (the MCP tools): one place, so that what is advertised is what holds.

/** A link's password, in characters. */
export const PASSWORD_LENGTH = { min: 4, max: 256 }

/** The largest `maxDownloads`. */
export const MAX_DOWNLOADS_LIMIT = 1_000_000_000
