import { Type } from 'typebox'
import { DateTime, Nullable, toIso, toIsoOrNull } from '../http/schemas.ts'
import type { PublicUrls } from '../public-urls.ts'
import type { Share, ShareWithFile } from './shares.repository.ts'

// Spec 2.5, field for field: a share's file and public id are reached through the file (its `share`)
// and `publicUrl`, so they are not repeated here.
const shareFields = {
  id: Type.String(),
  isActive: Type.Boolean({
    description: 'Effective state: false when the link is disabled, and false once `expiresAt` has passed.',
  }),
  expiresAt: Nullable(DateTime('When the link stops working; null: it never expires.')),
  viewCount: Type.Integer({ minimum: 0, description: 'Views of the public share page.' }),
  downloadCount: Type.Integer({ minimum: 0, description: 'Downloads through the public link.' }),
  createdAt: DateTime(),
  publicUrl: Type.String({ format: 'uri', description: 'The public page of the link.' }),
}

export const ShareSchema = Type.Object(shareFields, {
  $id: 'Share',
  additionalProperties: false,
  description: "A file's public share link. A file has at most one.",
})

export const ShareWithFileSchema = Type.Object(
  {
    ...shareFields,
    file: Type.Object(
      {
        name: Type.String(),
        contentType: Type.String(),
        size: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false, description: 'The shared file.' },
    ),
  },
  { $id: 'ShareWithFile', additionalProperties: false, description: 'A share link and its file.' },
)

/** A share as ShareSchema shows it. */
export const serializeShare = (share: Share, urls: PublicUrls) => ({
  id: share.id,
  isActive: share.isActive,
  expiresAt: toIsoOrNull(share.expiresAt),
  viewCount: share.viewCount,
  downloadCount: share.downloadCount,
  createdAt: toIso(share.createdAt),
  publicUrl: urls.sharePage(share.publicId),
})

/** A share and its file as ShareWithFileSchema shows them. */
export const serializeShareWithFile = (share: ShareWithFile, urls: PublicUrls) => ({
  ...serializeShare(share, urls),
  file: share.file,
})

const ExpiresAtInput = Nullable(
  DateTime(
    'When the link stops working: a date-time in the future (a past or present one is a 400), or null for never.',
  ),
)

export const CreateShareBody = Type.Object(
  {
    fileId: Type.String({ minLength: 1, maxLength: 128, description: 'An owned file.' }),
    expiresAt: Type.Optional(ExpiresAtInput),
  },
  { additionalProperties: false },
)

export const UpdateShareBody = Type.Object(
  {
    isActive: Type.Optional(
      Type.Boolean({
        description:
          'false disables the link. true enables it; that is a 409 while its stored expiry has passed, unless the same body sets a new `expiresAt`.',
      }),
    ),
    expiresAt: Type.Optional(ExpiresAtInput),
  },
  { additionalProperties: false, minProperties: 1 },
)
