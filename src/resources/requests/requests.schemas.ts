import { Type } from 'typebox'
import {
  DateTime,
  Extension,
  FolderIdValue,
  Nullable,
  PageQuery,
  toIso,
  toIsoOrNull,
} from '../../platform/http/schemas.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { serializeFolder } from '../folders/folders.schemas.ts'
import { REQUEST_STATES, requestStateOf } from './request-state.ts'
import type { FileRequest, RequestLimits, Submission } from './requests.repository.ts'
import { ALLOWED_TYPES_LIMITS } from './submission-rules.shared.ts'

/** The rule tying the two email settings together, stated once for every place that documents it. */
export const EMAIL_RULE =
  '`emailRequired` only has a meaning while `collectEmail` is true: a request never requires an email it does ' +
  'not collect. A body that sets `collectEmail: false` together with `emailRequired: true` is a 400; setting ' +
  '`collectEmail` to false also stores `emailRequired` as false; setting `emailRequired: true` on a request ' +
  'that does not collect email (without `collectEmail: true` in the same body) is a 409.'

/** A request's title, in the API's bodies and the owner's forms. */
export const Title = Type.String({
  minLength: 3,
  maxLength: 100,
  description: 'Shown on the public request page. Leading and trailing spaces are removed.',
})
/** A request's description, in the API's bodies and the owner's forms. */
export const Description = Type.String({
  maxLength: 500,
  description: 'Shown on the public request page. Line breaks are stored as \\n.',
})
const RequestFolderId = Nullable(
  FolderIdValue('An owned folder that receives the submitted files; null means root.'),
)

/** A request's state (request-state.ts): every answer that shows a request carries it. */
export const RequestStateSchema = Type.Enum([...REQUEST_STATES], {
  $id: 'RequestState',
  description:
    'What a file request is now, read-only: `open` (its page takes files), `disabled` (its owner turned it off), `past_deadline` (its deadline has passed) or `full` (it has received its `maxFiles` files); the first that holds in this order.',
})

const requestProperties = {
  id: Type.String(),
  title: Type.String(),
  description: Nullable(Type.String()),
  collectEmail: Type.Boolean({ description: 'Whether the public page asks submitters for their email.' }),
  emailRequired: Type.Boolean({
    description: 'Whether submitters must give their email; never true while `collectEmail` is false.',
  }),
  isActive: Type.Boolean({
    description:
      'false once its owner disabled it: it then refuses new submissions. `state` says whether it takes files now.',
  }),
  state: Extension(Type.Ref('RequestState', { readOnly: true })),
  createdAt: DateTime(),
  publicUrl: Type.String({ format: 'uri', description: 'The public page where submitters upload files.' }),
  folderId: Nullable(Type.String({ minLength: 1, maxLength: 100, description: 'null means root' })),
  folder: Nullable(Type.Ref('Folder')),
}

export const FileRequestSchema = Type.Object(requestProperties, {
  $id: 'FileRequest',
  additionalProperties: false,
  description: 'A public page that collects files from outside submitters.',
})

export const FileRequestWithCountSchema = Type.Object(
  {
    ...requestProperties,
    submissionCount: Type.Integer({ minimum: 0, description: 'Submissions received so far.' }),
  },
  { $id: 'FileRequestWithCount', additionalProperties: false },
)

export const SubmissionSchema = Type.Object(
  {
    submitterName: Nullable(Type.String({ description: 'Provided by the submitter.' })),
    submitterEmail: Nullable(Type.String({ format: 'email', description: 'Provided by the submitter.' })),
    message: Nullable(Type.String({ description: 'Provided by the submitter.' })),
    createdAt: DateTime(),
    file: Type.Ref('FileSummary', {
      description:
        'The submitted file as it was when submitted; it stays here after the file itself is deleted.',
    }),
  },
  {
    $id: 'Submission',
    additionalProperties: false,
    description: 'A file received through a file request. Never carries a storage URL.',
  },
)

/** A file request as FileRequestSchema shows it. */
export const serializeRequest = (r: FileRequest, urls: PublicUrls) => ({
  id: r.id,
  title: r.title,
  description: r.description,
  collectEmail: r.collectEmail,
  emailRequired: r.emailRequired,
  isActive: r.isActive,
  state: requestStateOf(r),
  createdAt: toIso(r.createdAt),
  publicUrl: urls.requestPage(r.publicId),
  folderId: r.folderId,
  folder: r.folder === null ? null : serializeFolder(r.folder),
})

/** A file request as FileRequestWithCountSchema shows it. */
export const serializeRequestWithCount = (r: FileRequest, urls: PublicUrls) => ({
  ...serializeRequest(r, urls),
  submissionCount: r.submissionCount,
})

/** A submission as SubmissionSchema shows it. */
export const serializeSubmission = (s: Submission) => ({
  submitterName: s.submitterName,
  submitterEmail: s.submitterEmail,
  message: s.message,
  createdAt: toIso(s.createdAt),
  file: s.file,
})

export const CreateRequestBody = Type.Object(
  {
    title: Title,
    description: Type.Optional(Description),
    collectEmail: Type.Optional(Type.Boolean({ default: true, description: 'Defaults to true.' })),
    emailRequired: Type.Optional(
      Type.Boolean({
        description: 'Defaults to true while `collectEmail` is true, and to false otherwise.',
      }),
    ),
    folderId: Type.Optional(RequestFolderId),
  },
  { additionalProperties: false },
)

export const UpdateRequestBody = Type.Object(
  {
    title: Type.Optional(Title),
    description: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'null clears it.' }))),
    collectEmail: Type.Optional(Type.Boolean()),
    emailRequired: Type.Optional(Type.Boolean()),
    isActive: Type.Optional(Type.Boolean({ description: 'false disables the request.' })),
    folderId: Type.Optional(
      Nullable(FolderIdValue('Moves the request into this owned folder; null moves it to root.')),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const ListRequestsQuery = Type.Object(
  {
    ...PageQuery(25),
    folderId: Type.Optional(FolderIdValue('Only requests in this owned folder.')),
  },
  { additionalProperties: false },
)

export const SubmissionsQuery = Type.Object(PageQuery(25), { additionalProperties: false })

/** The largest `maxFiles` a request may have. */
export const MAX_FILES_BOUND = 1_000_000

const LIMITS_DESCRIPTION =
  "What the request's public page accepts, beyond the server's own bounds. null (or, for `allowedTypes`, an empty list) means no limit of that kind."

export const RequestLimitsSchema = Extension(
  Type.Object(
    {
      deadline: Nullable(DateTime('After this time the page accepts no more files (410), as if disabled.')),
      maxFiles: Nullable(
        Type.Integer({
          minimum: 1,
          maximum: MAX_FILES_BOUND,
          description:
            'Files accepted in all: submissions received and uploads under way together. A preparation that would go past it is a 409.',
        }),
      ),
      maxFileSize: Nullable(
        Type.Integer({
          minimum: 1,
          description: 'The largest file accepted, in bytes; at most the server maximum (MAX_FILE_SIZE).',
        }),
      ),
      allowedTypes: Type.Array(
        Type.String({
          minLength: 1,
          maxLength: ALLOWED_TYPES_LIMITS.length,
          description: 'An extension (".pdf", ".tar.gz") or a MIME type ("application/pdf", "image/*").',
        }),
        {
          maxItems: ALLOWED_TYPES_LIMITS.entries,
          description:
            'A file is accepted when its name ends with one of the extensions or its type is one of the types; stored in lower case. The type is checked as declared when the upload is prepared and, when the bytes show another type once stored, that type too.',
        },
      ),
    },
    { $id: 'RequestLimits', additionalProperties: false, description: LIMITS_DESCRIPTION },
  ),
)

export const PutRequestLimitsBody = Type.Object(
  {
    deadline: Type.Optional(Nullable(DateTime('Must be in the future.'))),
    maxFiles: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_FILES_BOUND }))),
    maxFileSize: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    allowedTypes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: ALLOWED_TYPES_LIMITS.length }), {
        maxItems: ALLOWED_TYPES_LIMITS.entries,
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Replaces every limit: a field left out is no limit of that kind.',
  },
)

/** A request's limits as RequestLimitsSchema shows them. */
export const serializeLimits = (limits: RequestLimits) => ({
  deadline: toIsoOrNull(limits.deadlineAt),
  maxFiles: limits.maxFiles,
  maxFileSize: limits.maxFileSize,
  allowedTypes: limits.allowedTypes,
})
