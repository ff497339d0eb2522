// coffer/client: Coffer's SDK, for Node and browsers. See README, "The SDK".
export {
  type AuditEntry,
  type Capabilities,
  Coffer,
  type CofferOptions,
  type File,
  type FileRequest,
  type FileRequestWithCount,
  type Folder,
  type FolderShare,
  type Page,
  type Share,
  type ShareSettings,
  type ShareWithFile,
  type Submission,
  type TrashedFile,
  type Usage,
  type Webhook,
  type WebhookDelivery,
  type WebhookWithSecret,
} from './coffer.ts'
export { type ClientErrorCode, CofferError } from './errors.ts'
export type { Credentials, OAuthCredentials, OAuthTokens } from './http.ts'
export {
  fileResumeStore,
  memoryResumeStore,
  type ResumeRecord,
  type ResumeStore,
  resumeKeyOf,
} from './resume.ts'
export { indexedDbResumeStore } from './resume-indexeddb.ts'
export {
  type MultipartState,
  type StoredPart,
  sendBytes,
  type TransferOptions,
  type UploadGrant,
} from './transfer.ts'
export type { UploadOptions, UploadSource } from './upload.ts'
