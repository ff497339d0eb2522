import { Type } from 'typebox'
import { DateTime, Extension, Nullable, toIso, toIsoOrNull } from '../../platform/http/schemas.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from '../files/share-settings.shared.ts'
import { SHARE_STATES } from '../files/share-state.ts'
import type { Share, ShareWithFile } from './shares.repository.ts'

/** A link's state (share-state.ts): every answer that shows a link carries it, as `Type.Ref('ShareState')`. */
export const ShareStateSchema = Type.Enum([...SHARE_STATES], {
  $id: 'ShareState',
  description:
    'What a share link is now, read-only: `active` (it opens), `disabled` (its owner turned it off), `expired` (its `expiresAt` has passed) or `exhausted` (its downloads reached `maxDownloads`); the first that holds in this order.',
})

/** A `state` property of a link, read-only. */
export const ShareStateProperty = () => Extension(Type.Ref('ShareState', { readOnly: true }))

/** What every link shows, of a file or of a folder (folder-shares.schemas.ts). */
export const linkFields = {
  id: Type.String(),
  isActive: Type.Boolean({
    description:
      'false when the link is disabled, and false once `expiresAt` has passed. A link whose downloads reached `maxDownloads` stays active but no longer opens: `state` says whether it opens.',
  }),
  state: ShareStateProperty(),
  expiresAt: Nullable(DateTime('When the link stops working; null: it never expires.')),
  createdAt: DateTime(),
  hasPassword: Extension(
    Type.Boolean({ description: 'Whether the public page asks for a password before showing anything.' }),
  ),
  maxDownloads: Extension(
    Nullable(
      Type.Integer({
        minimum: 1,
        description:
          'Downloads allowed in all; once `downloadCount` reaches it, the link answers 410 (a download already under way may still fetch the rest of its bytes in ranges). null: no limit.',
      }),
    ),
  ),
}

// The contract's Share, field for field (a share's file and public id are reached through the file, its
// `share`, and `publicUrl`, so they are not repeated here), then Coffer's additive fields.
const shareFields = {
  id: linkFields.id,
  isActive: linkFields.isActive,
  state: linkFields.state,
  expiresAt: linkFields.expiresAt,
  viewCount: Type.Integer({
    minimum: 0,
    description:
      'Views of the public share page: GET requests of the page that showed the file (not HEAD, not a browser prefetch such as `Sec-Purpose: prefetch`, not the password form of a protected link). Each is committed before the page is sent.',
  }),
  downloadCount: Type.Integer({
    minimum: 0,
    description:
      "Downloads through the public link: GET requests of its download address that begin at byte 0 (the whole file, or a range starting at 0), so a media player's later ranges do not add to it; not HEAD, not a 304. Each is committed before the bytes are sent.",
  }),
  createdAt: linkFields.createdAt,
  publicUrl: Type.String({ format: 'uri', description: 'The public page of the link.' }),
  hasPassword: linkFields.hasPassword,
  maxDownloads: linkFields.maxDownloads,
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
  state: share.state,
  expiresAt: toIsoOrNull(share.expiresAt),
  viewCount: share.viewCount,
  downloadCount: share.downloadCount,
  createdAt: toIso(share.createdAt),
  publicUrl: urls.sharePage(share.publicId),
  hasPassword: share.hasPassword,
  maxDownloads: share.maxDownloads,
})

/** A share and its file as ShareWithFileSchema shows them. */
export const serializeShareWithFile = (share: ShareWithFile, urls: PublicUrls) => ({
  ...serializeShare(share, urls),
  file: share.file,
})

export const ExpiresAtInput = Nullable(
  DateTime(
    'When the link stops working: a date-time in the future (a past or present one is a 400), or null for never.',
  ),
)

export const PasswordInput = Extension(
  Nullable(
    Type.String({
      minLength: PASSWORD_LENGTH.min,
      maxLength: PASSWORD_LENGTH.max,
      description: `A password the public page asks for before it shows anything of what it shares (${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters); null removes it. Stored only as a slow hash, never returned: responses say \`hasPassword\`.`,
    }),
  ),
)

export const MaxDownloadsInput = Extension(
  Nullable(
    Type.Integer({
      minimum: 1,
      maximum: MAX_DOWNLOADS_LIMIT,
      description:
        'Downloads allowed in all, counted as `downloadCount` counts them; null: no limit. It may be set below the downloads so far, which closes the link.',
    }),
  ),
)

export const CreateShareBody = Type.Object(
  {
    fileId: Type.String({ minLength: 1, maxLength: 128, description: 'An owned file.' }),
    expiresAt: Type.Optional(ExpiresAtInput),
    password: Type.Optional(PasswordInput),
    maxDownloads: Type.Optional(MaxDownloadsInput),
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
    password: Type.Optional(PasswordInput),
    maxDownloads: Type.Optional(MaxDownloadsInput),
  },
  { additionalProperties: false, minProperties: 1 },
)
