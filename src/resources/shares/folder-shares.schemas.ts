import { Type } from 'typebox'
import { FolderIdValue, toIso, toIsoOrNull } from '../../platform/http/schemas.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import type { FolderShare } from './folder-shares.repository.ts'
import { ExpiresAtInput, linkFields, MaxDownloadsInput, PasswordInput } from './shares.schemas.ts'

export const FolderShareSchema = Type.Object(
  {
    id: linkFields.id,
    folderId: Type.String(),
    folder: Type.Object(
      { id: Type.String(), name: Type.String() },
      { additionalProperties: false, description: 'The shared folder, as it is named now.' },
    ),
    isActive: linkFields.isActive,
    state: linkFields.state,
    expiresAt: linkFields.expiresAt,
    hasPassword: linkFields.hasPassword,
    maxDownloads: linkFields.maxDownloads,
    viewCount: Type.Integer({
      minimum: 0,
      description:
        'Views of the public page: GET requests of its first page of files (not the pages after it, not HEAD, not a browser prefetch, not the password form). Each is committed before the page is sent.',
    }),
    downloadCount: Type.Integer({
      minimum: 0,
      description:
        'Downloads through the link: each of its files downloaded from byte 0, and each download of the whole folder as a zip. Each is committed before the bytes are sent.',
    }),
    createdAt: linkFields.createdAt,
    publicUrl: Type.String({
      format: 'uri',
      description: "The link's public page: the folder's files as they are now, newest first.",
    }),
  },
  {
    $id: 'FolderShare',
    additionalProperties: false,
    description:
      "A folder's public link (a Coffer extension): its page lists the files in the folder as they are now (a file added later appears, one moved out or deleted disappears), each viewable and downloadable, and the whole folder as one zip. A folder has at most one.",
  },
)

/** A folder link as FolderShareSchema shows it. */
export const serializeFolderShare = (share: FolderShare, urls: PublicUrls) => ({
  id: share.id,
  folderId: share.folderId,
  folder: share.folder,
  isActive: share.isActive,
  state: share.state,
  expiresAt: toIsoOrNull(share.expiresAt),
  hasPassword: share.hasPassword,
  maxDownloads: share.maxDownloads,
  viewCount: share.viewCount,
  downloadCount: share.downloadCount,
  createdAt: toIso(share.createdAt),
  publicUrl: urls.folderSharePage(share.publicId),
})

export const CreateFolderShareBody = Type.Object(
  {
    folderId: FolderIdValue('An owned folder.'),
    expiresAt: Type.Optional(ExpiresAtInput),
    password: Type.Optional(PasswordInput),
    maxDownloads: Type.Optional(MaxDownloadsInput),
  },
  { additionalProperties: false },
)
