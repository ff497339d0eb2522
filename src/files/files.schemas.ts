import { Type } from 'typebox'
import { DateTime, Nullable } from '../http/schemas.ts'

export const FileSummarySchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    contentType: Type.String(),
    size: Type.Integer({ minimum: 0 }),
  },
  { $id: 'FileSummary', additionalProperties: false },
)

export const FileShareSummarySchema = Type.Object(
  {
    id: Type.Optional(Type.String()),
    publicId: Type.Optional(Type.String()),
    publicUrl: Type.Optional(Type.String({ format: 'uri' })),
    isActive: Type.Optional(
      Type.Boolean({ description: 'Effective state: false once `expiresAt` has passed, whatever was set.' }),
    ),
    expiresAt: Type.Optional(Nullable(DateTime())),
    viewCount: Type.Optional(Type.Integer({ minimum: 0 })),
    downloadCount: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { $id: 'FileShareSummary', additionalProperties: false, description: "The file's share link." },
)

export const FileSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    contentType: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    createdAt: DateTime(),
    share: Nullable(Type.Ref('FileShareSummary')),
    folderId: Nullable(Type.String({ minLength: 1, maxLength: 100, description: 'null means root' })),
    folder: Nullable(Type.Ref('Folder')),
  },
  { $id: 'File', additionalProperties: false },
)
