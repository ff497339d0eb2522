import { Type } from 'typebox'
import { DateTime, Extension, FolderIdValue, Nullable, toIso } from '../../platform/http/schemas.ts'
import type { Grant } from './uploads.service.ts'

/** A grant as UploadGrantSchema shows it. */
export const serializeGrant = (grant: Grant) => ({ ...grant, expiresAt: toIso(grant.expiresAt) })

export const PrepareUploadBody = Type.Object(
  {
    files: Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 255, description: 'File name.' }),
          type: Type.String({
            minLength: 1,
            maxLength: 255,
            description: 'Content type the file is sent with.',
          }),
          size: Type.Integer({
            minimum: 1,
            description:
              'Size in bytes; at most the server maximum (MAX_FILE_SIZE, in the capability index).',
          }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 100 },
    ),
    folderId: Type.Optional(
      Nullable(FolderIdValue('An owned folder: the files are created inside it. Absent or null: root.')),
    ),
  },
  { additionalProperties: false },
)

export const UploadGrantSchema = Type.Object(
  {
    intentId: Type.String({ description: 'Identifies the upload intent.' }),
    name: Type.String(),
    contentType: Type.String({
      description: 'Pass it as contentType to upload(); the blob endpoint refuses any other type.',
    }),
    size: Type.Integer({ description: 'The declared size; the blob endpoint refuses more bytes.' }),
    pathname: Type.String({
      description: 'Storage path chosen by the server, unique to this upload; pass it to upload() unchanged.',
    }),
    handleUploadUrl: Type.String({ format: 'uri', description: 'Handshake address for the blob client.' }),
    statusUrl: Type.String({ format: 'uri', description: 'GET it (files:write) until the upload ends.' }),
    clientPayload: Type.Object(
      {
        intentId: Type.String(),
        name: Type.String(),
        grant: Type.String({
          minLength: 32,
          description: 'Secret that authorises this one upload, like a presigned URL: never log or store it.',
        }),
      },
      {
        additionalProperties: false,
        description: 'Pass to upload() as clientPayload, serialised with JSON.stringify.',
      },
    ),
    expiresAt: DateTime('The grant is refused after this time; an upload not stored by then ends in error.'),
  },
  { additionalProperties: false },
)

/** What an unfinished multipart upload stored, as an upload's status tells it (a Coffer extension). */
export const StoredUploadSchema = Extension(
  Type.Object(
    {
      uploadId: Type.String({ description: 'The multipart upload, as `createMultipartUpload` named it.' }),
      parts: Type.Array(
        Type.Object(
          {
            partNumber: Type.Integer({ minimum: 1 }),
            size: Type.Integer({ minimum: 0 }),
            etag: Type.String({
              description: 'As `uploadPart` answered it: pass it to `completeMultipartUpload`.',
            }),
          },
          { additionalProperties: false },
        ),
        { description: 'The parts stored, one per number, in order.' },
      ),
    },
    {
      additionalProperties: false,
      description:
        "While uploading: the upload's multipart upload that holds the most bytes, with the parts the server keeps of it (for the grant's life), so that a client that was stopped (killed, a closed tab, a lost connection) sends only the parts missing, with a client token from a new handshake, and completes it with `completeMultipartUpload`.",
    },
  ),
)

export const UploadStatusSchema = Type.Union(
  [
    Type.Object(
      {
        status: Type.Literal('pending'),
        phase: Type.Union([Type.Literal('uploading'), Type.Literal('processing')], {
          description: 'uploading until the blob is stored, then processing until the file exists.',
        }),
        multipart: Type.Optional(StoredUploadSchema),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        status: Type.Literal('complete'),
        result: Type.Object(
          { id: Type.String({ description: 'The new file ID.' }) },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { status: Type.Literal('error'), error: Type.String({ description: 'What went wrong.' }) },
      { additionalProperties: false },
    ),
  ],
  { description: 'One of three shapes, by status.' },
)

/** The blob client's handshake event (docs/blob-protocol.md §2). */
export const HandshakeBody = Type.Object(
  {
    type: Type.Literal('blob.generate-client-token'),
    payload: Type.Object({
      pathname: Type.String({ minLength: 1, maxLength: 1000 }),
      clientPayload: Nullable(Type.String({ maxLength: 4096 })),
      multipart: Type.Optional(Type.Boolean()),
    }),
  },
  { additionalProperties: false },
)
