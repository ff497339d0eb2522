// The refusal of uploads that would pass an account's quota, or of a file larger than its largest file (413
// `quota_exceeded`): thrown by QuotasService.admit, and told in other words where the account's figures are
// not the reader's business (a file request's public page).
import { AppError } from '../../platform/errors.ts'

export class QuotaExceeded extends AppError {
  /** What was passed: the storage quota, or the largest file (then `field` names the file's size). */
  readonly reason: 'quota' | 'largest_file'

  constructor(reason: 'quota' | 'largest_file', message: string, hint: string, field?: string) {
    super('quota_exceeded', message, hint, field)
    this.reason = reason
  }
}
