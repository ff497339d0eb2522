// The endpoints the upload queue (upload-queue.ts) prepares, follows and cancels uploads through, one for each
// kind of uploader: the API with an API key or OAuth tokens (the SDK's `files.upload`, the coffer command), the
// owner's session (the files page: the session cookie and its CSRF token, never an API key), and a file
// request's public API (its page: no credential, the grants in the bodies authorize the uploads).
import type { components, operations } from './api.d.ts'
import { CofferError } from './errors.ts'
import type { UploadGrant } from './transfer.ts'
import type { TransferSettings, UploadEndpoint, UploadStatus } from './upload-queue.ts'

/** The JSON body of an operation. */
type BodyOf<Operation extends keyof operations> =
  NonNullable<operations[Operation]['requestBody']> extends { content: { 'application/json': infer Body } }
    ? Body
    : never
/** The `data` of an operation's answer with `status`. */
type DataOf<
  Operation extends keyof operations,
  Status extends number,
> = operations[Operation]['responses'] extends {
  [S in Status]: { content: { 'application/json': { data: infer Data } } }
}
  ? Data
  : never

/** What uploading through the API asks of the client (Coffer): the steps of the upload procedure. */
export interface UploadSteps {
  /** The server's address: an upload resumes only on the server (and into the folder) it began on. */
  url?: string
  capabilities(): Promise<{ uploads: { blobApiUrl: string; multipartThresholdBytes: number } }>
  files: {
    prepareUploads(body: BodyOf<'prepareUploads'>): Promise<DataOf<'prepareUploads', 201>['uploads']>
    uploadStatus(intentId: string): Promise<DataOf<'getUploadStatus', 200>>
    get(fileId: string): Promise<components['schemas']['File']>
  }
}

/**
 * Uploads into `folderId` (the root when null; the API's default when undefined) through the API: POST /files,
 * then each upload's status. The API has no call to cancel an upload: one given up expires by itself.
 */
export function apiUploads(coffer: UploadSteps, folderId?: string | null): UploadEndpoint {
  return {
    transferSettings: async () => {
      const { uploads } = await coffer.capabilities()
      return { blobApiUrl: uploads.blobApiUrl, multipartThreshold: uploads.multipartThresholdBytes }
    },
    prepare: (files) =>
      coffer.files.prepareUploads({ files, ...(folderId === undefined ? {} : { folderId }) }),
    status: (grants) => Promise.all(grants.map((grant) => coffer.files.uploadStatus(grant.intentId))),
  }
}

/**
 * Uploads into `folderId` through the owner's session, from the app's own pages: POST /uploads, /uploads/status
 * and /uploads/cancel, with the session cookie and the page's CSRF token. A refusal is thrown as a CofferError,
 * status 0 when the server could not be reached.
 */
export function sessionUploads(options: {
  csrf: string
  folderId: string | null
  transfer: TransferSettings
}): UploadEndpoint {
  const call = async (path: string, body: unknown): Promise<Response> => {
    let response: Response
    try {
      response = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': options.csrf },
        body: JSON.stringify(body),
        credentials: 'same-origin',
      })
    } catch (error) {
      throw new CofferError(0, 'network_error', 'The server could not be reached.', '', { cause: error })
    }
    if (!response.ok) throw await CofferError.fromResponse(response)
    return response
  }
  const intentIds = (grants: UploadGrant[]) => grants.map((grant) => grant.intentId)
  return {
    transferSettings: async () => options.transfer,
    prepare: async (files) => {
      const response = await call('/uploads', { folderId: options.folderId, files })
      return ((await response.json()) as { data: { uploads: UploadGrant[] } }).data.uploads
    },
    status: async (grants) => {
      const response = await call('/uploads/status', { intentIds: intentIds(grants) })
      return ((await response.json()) as { data: UploadStatus[] }).data
    },
    cancel: async (grants) => {
      await call('/uploads/cancel', { intentIds: intentIds(grants) })
    },
  }
}

/** What uploading to a file request asks of the client (Coffer): its public calls. */
export interface PublicRequestSteps {
  publicRequests: {
    prepareUploads(
      publicId: string,
      body: BodyOf<'preparePublicUploads'>,
    ): Promise<DataOf<'preparePublicUploads', 201>>
    uploadStatus(publicId: string, body: BodyOf<'getPublicUploadStatus'>): Promise<UploadStatus[]>
    cancelUploads(publicId: string, body: BodyOf<'cancelPublicUploads'>): Promise<unknown>
  }
}

/** What a submitter typed, sent with each preparation. */
export type Submitter = Omit<BodyOf<'preparePublicUploads'>, 'files'>

/**
 * Uploads to the file request `publicId` through its public API, the submitter's fields (as `submitter()`
 * says at each preparation) going with the files; each upload is named by its grant in the bodies.
 */
export function publicRequestUploads(
  coffer: PublicRequestSteps,
  options: { publicId: string; submitter: () => Submitter; transfer: TransferSettings },
): UploadEndpoint {
  const { publicId } = options
  const granted = (grants: UploadGrant[]) => ({
    uploads: grants.map((grant) => ({ intentId: grant.intentId, grant: grant.clientPayload.grant })),
  })
  return {
    transferSettings: async () => options.transfer,
    prepare: async (files) =>
      (await coffer.publicRequests.prepareUploads(publicId, { ...options.submitter(), files })).uploads,
    status: (grants) => coffer.publicRequests.uploadStatus(publicId, granted(grants)),
    cancel: async (grants) => {
      await coffer.publicRequests.cancelUploads(publicId, granted(grants))
    },
  }
}
