import { Type } from 'typebox'
import { Nullable } from '../../platform/http/schemas.ts'
import { availableOf, type Usage } from './quotas.service.ts'

const Bytes = (description: string) => Type.Integer({ minimum: 0, description })

export const UsageSchema = Type.Object(
  {
    files: Bytes('The account’s files, those in the trash included.'),
    bytes: Bytes('Their bytes, the trash included: what the quota counts.'),
    trashFiles: Bytes('Of `files`, those in the trash (they count until they are purged).'),
    trashBytes: Bytes('Of `bytes`, those in the trash.'),
    quotaBytes: Nullable(
      Bytes(
        'The storage quota that applies: the account’s own, or the server’s default (DEFAULT_QUOTA_BYTES); null: unlimited.',
      ),
    ),
    maxFileBytes: Nullable(
      Bytes('The largest file the account may upload; null: none but the server’s (`limits.fileSize.max`).'),
    ),
    available: Nullable(
      Bytes(
        '`quotaBytes` − `bytes`, at least 0; null: unlimited. Uploads under way reserve their declared size from it when prepared.',
      ),
    ),
  },
  {
    $id: 'Usage',
    additionalProperties: false,
    description:
      'What an account stores against its quota. A preparation of uploads whose sizes, with what is stored and the uploads under way, would pass the quota is refused with 413 `quota_exceeded`.',
  },
)

export const serializeUsage = (usage: Usage) => ({
  files: usage.files,
  bytes: usage.bytes,
  trashFiles: usage.trashFiles,
  trashBytes: usage.trashBytes,
  quotaBytes: usage.quotaBytes,
  maxFileBytes: usage.maxFileBytes,
  available: availableOf(usage),
})
