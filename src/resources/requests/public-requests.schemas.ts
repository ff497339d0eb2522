// Schemas of a file request's public API (public-requests.routes.ts): what the request's page reads and
// sends. No credential: the public id is the capability, and each upload's grant authorizes its status.
import { Type } from 'typebox'
import { DateTime, Extension, IdParam, Nullable, toIso, toIsoOrNull } from '../../platform/http/schemas.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { PrepareUploadBody, StoredUploadSchema, UploadGrantSchema } from '../uploads/uploads.schemas.ts'
import type { Grant, UploadStatus } from '../uploads/uploads.service.ts'
import type { PublicFileRequest } from './requests.repository.ts'
import { MAX_FILES_PER_PREPARATION, SUBMISSION_LIMITS } from './submission-rules.shared.ts'

export const PublicRequestParams = IdParam('publicId')

export const PublicFileRequestSchema = Extension(
  Type.Object(
    {
      title: Type.String(),
      description: Nullable(Type.String()),
      collectEmail: Type.Boolean({ description: 'Whether the page asks for the submitter email.' }),
      emailRequired: Type.Boolean({ description: 'Whether the submitter email must be given.' }),
      deadline: Nullable(DateTime('After this time the request accepts no more files.')),
      maxFiles: Nullable(Type.Integer({ description: 'Files the request accepts in all, from everyone.' })),
      maxFileSize: Type.Integer({
        description:
          "The largest file accepted, in bytes: the request's own limit, within its owner's account's and the server's.",
      }),
      allowedTypes: Type.Array(Type.String(), {
        description: 'Extensions and MIME types accepted; empty for any file.',
      }),
      uploadsUrl: Type.String({ format: 'uri', description: "POST the submitter's files here." }),
    },
    {
      $id: 'PublicFileRequest',
      additionalProperties: false,
      description: "What a file request's public page shows a submitter: nothing of its owner or folder.",
    },
  ),
)

export const serializePublicRequest = (
  request: PublicFileRequest,
  maxFileSize: number,
  urls: PublicUrls,
) => ({
  title: request.title,
  description: request.description,
  collectEmail: request.collectEmail,
  emailRequired: request.emailRequired,
  deadline: toIsoOrNull(request.limits.deadlineAt),
  maxFiles: request.limits.maxFiles,
  maxFileSize,
  allowedTypes: request.limits.allowedTypes,
  uploadsUrl: `${urls.publicRequestApi(request.publicId)}/uploads`,
})

const submitterText = (max: number, description: string) =>
  Type.Optional(
    Nullable(Type.String({ maxLength: max, description: `${description} At most ${max} characters.` })),
  )

export const PreparePublicUploadsBody = Type.Object(
  {
    submitterName: submitterText(SUBMISSION_LIMITS.name, 'Optional; blank means not given.'),
    submitterEmail: submitterText(
      SUBMISSION_LIMITS.email,
      'Required when the request says `emailRequired`, dropped when it does not collect email.',
    ),
    message: submitterText(SUBMISSION_LIMITS.message, 'Optional; line breaks are kept.'),
    files: Type.Array(PrepareUploadBody.properties.files.items, {
      minItems: 1,
      maxItems: MAX_FILES_PER_PREPARATION,
    }),
  },
  { additionalProperties: false },
)

export const PublicUploadGrantSchema = Type.Omit(UploadGrantSchema, ['statusUrl'], {
  additionalProperties: false,
})

/** A grant as PublicUploadGrantSchema shows it: its status is asked for by grant, not at an account's URL. */
export const serializePublicGrant = ({ statusUrl: _, ...grant }: Grant) => ({
  ...grant,
  expiresAt: toIso(grant.expiresAt),
})

const GrantedIntents = Type.Object(
  {
    uploads: Type.Array(
      Type.Object(
        {
          intentId: Type.String({ minLength: 1, maxLength: 128 }),
          grant: Type.String({
            minLength: 1,
            maxLength: 512,
            description: 'The grant of its clientPayload.',
          }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_FILES_PER_PREPARATION },
    ),
  },
  { additionalProperties: false },
)

export const UploadStatusQueryBody = GrantedIntents
export const CancelUploadsBody = GrantedIntents

export const PublicUploadStatusSchema = Type.Object(
  {
    intentId: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('complete'), Type.Literal('error')]),
    phase: Type.Optional(
      Type.Union([Type.Literal('uploading'), Type.Literal('processing')], {
        description: 'While pending: uploading until the bytes are stored, then processing.',
      }),
    ),
    error: Type.Optional(Type.String({ description: 'What went wrong, for the submitter to read.' })),
    multipart: Type.Optional(StoredUploadSchema),
  },
  { additionalProperties: false },
)

/** An upload's status for the submitter: the new file's id is the owner's, not theirs. */
export function serializePublicStatus(intentId: string, status: UploadStatus) {
  switch (status.status) {
    case 'pending':
      return { intentId, ...status }
    case 'complete':
      return { intentId, status: status.status }
    case 'error':
      return { intentId, status: status.status, error: status.error }
  }
}
