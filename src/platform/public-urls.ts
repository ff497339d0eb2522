// Every absolute URL Coffer hands out, built in one place from PUBLIC_URL: what clients see in responses
// (a share's or request's public page, an upload's status), what the upload protocol needs (the handshake and
// the blob API), and the links of the capability index.

/** The base path of the REST API. */
export const API_BASE_PATH = '/api/v1'
export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server'
/** The API's protected resource metadata (RFC 9728): the well-known prefix, then the API's path. */
export const PROTECTED_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${API_BASE_PATH}`
/** The MCP server (streamable HTTP), a protected resource of its own. */
export const MCP_PATH = '/mcp'
export const MCP_RESOURCE_METADATA_PATH = `/.well-known/oauth-protected-resource${MCP_PATH}`

/** Where the blob client asks for its token (its `handleUploadUrl`). */
export const UPLOAD_HANDSHAKE_PATH = `${API_BASE_PATH}/files/uploads/handshake`

/** The path of the Vercel-Blob-compatible endpoint: what upload clients set as VERCEL_BLOB_API_URL. */
export const BLOB_API_PATH = '/blob'

/** The path, under the API base, of a file request's public API. */
export const publicRequestApiPath = (publicId: string) => `/public/requests/${publicId}`

export class PublicUrls {
  /** The origin clients reach the server at (PUBLIC_URL), without a trailing slash. */
  readonly origin: string
  readonly apiBase: string
  readonly openApi: string
  readonly docs: string
  readonly oauthMetadata: string
  /** The OAuth issuer: the origin of PUBLIC_URL. */
  readonly issuer: string
  readonly protectedResourceMetadata: string
  /** The MCP server's address, which is also its resource identifier for OAuth (RFC 8707). */
  readonly mcp: string
  readonly mcpResourceMetadata: string
  readonly blobApi: string
  readonly uploadHandshake: string

  constructor(origin: string) {
    this.origin = origin
    this.apiBase = `${origin}${API_BASE_PATH}`
    this.openApi = `${this.apiBase}/openapi.json`
    this.docs = `${origin}/docs`
    this.issuer = new URL(origin).origin
    this.oauthMetadata = `${this.issuer}${OAUTH_METADATA_PATH}`
    this.protectedResourceMetadata = `${origin}${PROTECTED_RESOURCE_METADATA_PATH}`
    this.mcp = `${origin}${MCP_PATH}`
    this.mcpResourceMetadata = `${origin}${MCP_RESOURCE_METADATA_PATH}`
    this.blobApi = `${origin}${BLOB_API_PATH}`
    this.uploadHandshake = `${origin}${UPLOAD_HANDSHAKE_PATH}`
  }

  /** The public page of a share link. */
  sharePage(publicId: string): string {
    return `${this.origin}/s/${publicId}`
  }

  /** The public page of a folder link: the folder's files. */
  folderSharePage(publicId: string): string {
    return `${this.origin}/sf/${publicId}`
  }

  /** The page an invitation links to, where its account is made. */
  invitationPage(secret: string): string {
    return `${this.origin}/account/invite/${secret}`
  }

  /** The page a "Forgot your password?" email links to. */
  passwordResetPage(secret: string): string {
    return `${this.origin}/account/reset-password/${secret}`
  }

  /** The public page of a file request, where outside submitters upload. */
  requestPage(publicId: string): string {
    return `${this.origin}/r/${publicId}`
  }

  /** A file request's public API: what its page reads, and where it prepares a submitter's uploads. */
  publicRequestApi(publicId: string): string {
    return `${this.apiBase}${publicRequestApiPath(publicId)}`
  }

  /** A file's image preview in the API (GET /files/{fileId}/preview). */
  filePreview(fileId: string): string {
    return `${this.apiBase}/files/${fileId}/preview`
  }

  /** Where the uploader polls an upload's status (GET /files/uploads/{intentId}). */
  uploadStatus(intentId: string): string {
    return `${this.apiBase}/files/uploads/${intentId}`
  }
}
