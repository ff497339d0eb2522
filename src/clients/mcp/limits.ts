// The MCP tools' limits, apart from the tools so that the route can know them without loading the MCP SDK.

/** The most bytes `read_file` and a resource read return: more would flood the model's context. */
export const READ_LIMIT = 1024 * 1024
/** The most bytes `upload_file` takes (its content travels inside a JSON-RPC message). */
export const UPLOAD_LIMIT = 10 * 1024 * 1024
