import { Type } from 'typebox'
import { DateTime, toIso } from '../../platform/http/schemas.ts'
import type { Folder } from './folders.repository.ts'

export const FolderSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    createdAt: DateTime(),
    fileCount: Type.Integer({ minimum: 0, description: 'Files in this folder.' }),
    requestCount: Type.Integer({ minimum: 0, description: 'File requests in this folder.' }),
  },
  { $id: 'Folder', additionalProperties: false, description: 'A flat folder of files and file requests.' },
)

/** A Folder as FolderSchema shows it. */
export const serializeFolder = (folder: Folder) => ({ ...folder, createdAt: toIso(folder.createdAt) })

export const FolderName = Type.String({
  minLength: 1,
  maxLength: 80,
  description: 'Unique per account, ignoring case. Leading and trailing spaces are removed.',
})

export const FolderBody = Type.Object({ name: FolderName }, { additionalProperties: false })
