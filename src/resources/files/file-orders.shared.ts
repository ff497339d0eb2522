// The orders a list of files can come in (GET /files?sort=), for every client that offers them: the server's
// list (file-order.ts), the coffer command and MCP.
export const FILE_ORDERS = ['newest', 'oldest', 'name', 'name-desc', 'largest', 'smallest'] as const
export type FileOrder = (typeof FILE_ORDERS)[number]
export const DEFAULT_FILE_ORDER: FileOrder = 'newest'
