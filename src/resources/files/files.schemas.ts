import { Type } from 'typebox'
import {
  DateTime,
  Extension,
  FolderIdValue,
  IdParam,
  Nullable,
  PageQuery,
  toIso,
  toIsoOrNull,
} from '../../platform/http/schemas.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { serializeFolder } from '../folders/folders.schemas.ts'
import { FILE_ORDERS } from './file-order.ts'
import type { StoredFile, TrashedFile } from './files.repository.ts'

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
      Type.Boolean({
        description:
          'false when the link is disabled, and false once `expiresAt` has passed; `state` says whether it opens.',
      }),
    ),
    state: Type.Optional(Extension(Type.Ref('ShareState', { readOnly: true }))),
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
    previewUrl: Extension(
      Nullable(
        Type.String({
          format: 'uri',
          description:
            'Where the image preview processing made is served (a WebP of at most 512 px, files:read); null when the file has none.',
        }),
      ),
    ),
  },
  { $id: 'File', additionalProperties: false },
)

export const TrashedFileSchema = Type.Object(
  {
    ...FileSchema.properties,
    deletedAt: DateTime('When the file was deleted into the trash.'),
    purgeAt: DateTime(
      'When the file goes for good, with its share link and bytes, unless it is restored before.',
    ),
  },
  {
    $id: 'TrashedFile',
    additionalProperties: false,
    description:
      'A file in the trash: the file as it was when deleted (its `share` is the link it gets back on restore).',
  },
)

/** A stored file as FileSchema shows it. */
export function serializeFile(file: StoredFile, urls: PublicUrls) {
  return {
    id: file.id,
    name: file.name,
    contentType: file.contentType,
    size: file.size,
    createdAt: toIso(file.createdAt),
    share: file.share && {
      id: file.share.id,
      publicId: file.share.publicId,
      publicUrl: urls.sharePage(file.share.publicId),
      isActive: file.share.isActive,
      state: file.share.state,
      expiresAt: toIsoOrNull(file.share.expiresAt),
      viewCount: file.share.viewCount,
      downloadCount: file.share.downloadCount,
    },
    folderId: file.folderId,
    folder: file.folder && serializeFolder(file.folder),
    previewUrl: file.preview && urls.filePreview(file.id),
  }
}

/** A file in the trash as TrashedFileSchema shows it. */
export function serializeTrashedFile(file: TrashedFile, urls: PublicUrls) {
  return { ...serializeFile(file, urls), deletedAt: toIso(file.trashedAt), purgeAt: toIso(file.purgeAt) }
}

export const FileName = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'Stored as given; a name of only spaces is refused.',
})

export const FileParams = IdParam('fileId')

export const ListFilesQuery = Type.Object(
  {
    query: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Substring of the file name, matched literally (`%`, `_`, `"` and `\\` have no special meaning), ' +
          'ignoring case as Unicode folds it: é/É, ж/Ж, ß/SS (and ẞ), ﬁ/fi, the Greek final sigma as σ, ' +
          'the Turkish ı and İ as i. Accents are not folded (e does not match é); an accent written as a ' +
          'separate mark matches the same letter written whole. Any length from one character.',
      }),
    ),
    ...PageQuery(50),
    folderId: Type.Optional(
      FolderIdValue('Only files in this folder; an absent folder or another account’s is a 404.'),
    ),
    sort: Type.Optional(
      Type.Enum([...FILE_ORDERS], {
        description:
          'Coffer extension. The order: `newest` first (the default), `oldest` first, by `name` (A to Z) or `name-desc`, `largest` or `smallest` first; ties go to the file id. Names are ordered ignoring the case of ASCII letters, then by their bytes. A cursor is of the order it came with. A search (`query`) comes newest first only.',
      }),
    ),
  },
  { additionalProperties: false },
)

export const UpdateFileBody = Type.Object(
  {
    name: Type.Optional(FileName),
    folderId: Type.Optional(
      Nullable(FolderIdValue('Moves the file into this folder of the account; null moves it to root.')),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const DeleteFilesBody = Type.Object(
  {
    fileIds: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
      minItems: 1,
      maxItems: 100,
      description:
        'Files to delete; ids that are absent or not the account’s are skipped, repeats count once.',
    }),
  },
  { additionalProperties: false },
)

export const DownloadQuery = Type.Object(
  {
    disposition: Type.Optional(
      Type.Enum(['attachment', 'inline'], {
        default: 'attachment',
        description: '`attachment` (default) asks the browser to save the file; `inline` to show it.',
      }),
    ),
  },
  { additionalProperties: false },
)
