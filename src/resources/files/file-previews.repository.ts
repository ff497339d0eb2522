// The image preview of a file as every read joins it (`file_previews`, left-joined: null when the file has
// none): the columns and their mapping, shared by the files' reads and the share links' (shares.repository.ts).

/** An image preview of a file, stored under `blobKey` (see blob-keys.ts). */
export interface FilePreview {
  fileId: string
  blobKey: string
  contentType: string
  width: number
  height: number
  size: number
}

/** The columns of a file's preview, joined as `file_previews` (left: null when the file has none). */
export const JOINED_PREVIEW_COLUMNS = [
  'file_previews.blob_key as preview_blob_key',
  'file_previews.content_type as preview_content_type',
  'file_previews.width as preview_width',
  'file_previews.height as preview_height',
  'file_previews.size as preview_size',
] as const

interface JoinedPreviewRow {
  preview_blob_key: string | null
  preview_content_type: string | null
  preview_width: number | null
  preview_height: number | null
  preview_size: number | null
}

/** The preview of a row read with JOINED_PREVIEW_COLUMNS, or null. */
export function joinedPreview(row: JoinedPreviewRow): Omit<FilePreview, 'fileId'> | null {
  if (row.preview_blob_key === null) return null
  return {
    blobKey: row.preview_blob_key,
    contentType: row.preview_content_type as string,
    width: Number(row.preview_width),
    height: Number(row.preview_height),
    size: Number(row.preview_size),
  }
}
