// Quotas (issue 45, 2): how much an account may store and the largest file it may upload, and what it stores.
// An account's quota is its own (an admin set a number, or unlimited), or else DEFAULT_QUOTA_BYTES (unset:
// unlimited). What counts is every byte of its files, the trash included (until purged), and the bytes that its
// uploads prepared and not finished declared (`admit`'s `reserved`): so preparations made at once reserve, and
// cannot together pass the quota. Checked before a byte is sent; the blob endpoint then holds every upload to
// its declared size.
import type { AuditLog } from '../../platform/audit/audit-log.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { invalid, notFound } from '../../platform/errors.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { QuotaExceeded } from './quota-exceeded.ts'
import type { QuotaSettings, QuotasRepository, StoredUsage } from './quotas.repository.ts'

/** An account's usage and limits, as the admin pages, the API and the app's menu show them. */
export interface Usage {
  /** Its files, those in the trash included. */
  files: number
  /** Their bytes, the trash included: what the quota counts. */
  bytes: number
  /** Of those, the files in the trash. */
  trashFiles: number
  /** Of those, the bytes in the trash. */
  trashBytes: number
  /** Where the quota comes from: a number an admin set, unlimited set by an admin, or the server's default. */
  quotaSetting: 'own' | 'unlimited' | 'default'
  /** The quota that applies (its own, or the server's default); null: unlimited. */
  quotaBytes: number | null
  /** The largest file it may upload; null: none but the server's (MAX_FILE_SIZE). */
  maxFileBytes: number | null
}

/** How an admin sets an account's limits; a field left out stays as it is. */
export interface QuotaChange {
  /** Bytes, null for unlimited (whatever the default), or 'default' for DEFAULT_QUOTA_BYTES. */
  quotaBytes?: number | null | 'default'
  /** Bytes, or null for none. */
  maxFileBytes?: number | null
}

/** Room left under a quota; null: unlimited. */
export const availableOf = (usage: Pick<Usage, 'bytes' | 'quotaBytes'>): number | null =>
  usage.quotaBytes === null ? null : Math.max(0, usage.quotaBytes - usage.bytes)

export const QUOTA_HINT = 'Delete files and empty the trash, or ask an admin for a larger quota.'

export class QuotasService {
  readonly #quotas: QuotasRepository
  readonly #transaction: Transactor
  readonly #audit: AuditLog
  /** DEFAULT_QUOTA_BYTES: the quota of an account with none of its own; null: unlimited. */
  readonly defaultQuotaBytes: number | null

  constructor(deps: {
    quotas: QuotasRepository
    transaction: Transactor
    /** Where an admin's change of an account's limits is recorded. */
    audit: AuditLog
    defaultQuotaBytes: number | undefined
  }) {
    this.#quotas = deps.quotas
    this.#transaction = deps.transaction
    this.#audit = deps.audit
    this.defaultQuotaBytes = deps.defaultQuotaBytes ?? null
  }

  /** The usage of each account, in one read; an id of no account is left out. */
  async usageOf(accountIds: string[]): Promise<Map<string, Usage>> {
    const found = await this.#quotas.of(accountIds)
    return new Map([...found].map(([id, { usage, settings }]) => [id, this.#usage(usage, settings)]))
  }

  /** One account's usage. */
  async usage(accountId: string): Promise<Usage> {
    const usage = (await this.usageOf([accountId])).get(accountId)
    if (!usage) throw notFound('Account')
    return usage
  }

  /** The largest file the account may upload; null: none but the server's (a file request's page says it). */
  async largestFileOf(accountId: string): Promise<number | null> {
    return (await this.usage(accountId)).maxFileBytes
  }

  /** Sets an account's quota and largest file; what is left out stays. Answers the usage with the new limits. */
  async set(accountId: string, change: QuotaChange): Promise<Usage> {
    for (const [field, value] of [
      ['quotaBytes', change.quotaBytes],
      ['maxFileBytes', change.maxFileBytes],
    ] as const) {
      if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= 0)) {
        throw invalid(`${field} must be a whole number of bytes, 0 or more.`, undefined, field)
      }
    }
    return this.#transaction(async (trx) => {
      const current = (await this.#quotas.of([accountId], trx)).get(accountId)
      if (!current) throw notFound('Account')
      const settings: QuotaSettings = { ...current.settings }
      if (change.quotaBytes === 'default') Object.assign(settings, { quotaBytes: null, unlimited: false })
      else if (change.quotaBytes === null) Object.assign(settings, { quotaBytes: null, unlimited: true })
      else if (change.quotaBytes !== undefined)
        Object.assign(settings, { quotaBytes: change.quotaBytes, unlimited: false })
      if (change.maxFileBytes !== undefined) settings.maxFileBytes = change.maxFileBytes
      const usage = this.#usage(current.usage, settings)
      // The same limits again change nothing, and are not an entry of the audit log.
      const same = (Object.keys(settings) as (keyof QuotaSettings)[]).every(
        (key) => settings[key] === current.settings[key],
      )
      if (same) return usage
      await this.#quotas.set(accountId, settings, Date.now(), trx)
      // The limits that now apply, and where the quota comes from (a default's number is the server's).
      await this.#audit.record(trx, {
        accountId,
        kind: 'account.quota_changed',
        details: {
          quota: usage.quotaSetting,
          quotaBytes: usage.quotaBytes,
          maxFileBytes: usage.maxFileBytes,
        },
      })
      return usage
    })
  }

  /**
   * In the transaction that records an account's new uploads (the files declared): refuses them (413
   * `quota_exceeded`) if a file is larger than the account's largest file, or if what it stores, with what its
   * unfinished uploads reserve (`reserved`, read after the lock) and these, would pass its quota. The account's
   * row is held first, so that the preparations of one account are checked one after another, in every process.
   */
  async admit(
    trx: Transaction,
    accountId: string,
    files: readonly { name: string; size: number }[],
    reserved: (trx: Transaction) => Promise<number>,
  ): Promise<void> {
    // An account without limits (every one, while DEFAULT_QUOTA_BYTES is unset) is not held.
    const before = (await this.#quotas.of([accountId], trx)).get(accountId)
    if (!before) throw notFound('Account')
    const limits = this.#usage(before.usage, before.settings)
    if (limits.quotaBytes === null && limits.maxFileBytes === null) return
    // Read again once held: what the preparations before this one committed meanwhile.
    if (!(await this.#quotas.lockAccount(trx, accountId))) throw notFound('Account')
    const current = (await this.#quotas.of([accountId], trx)).get(accountId)
    if (!current) throw notFound('Account')
    const usage = this.#usage(current.usage, current.settings)
    const { maxFileBytes, quotaBytes } = usage
    if (maxFileBytes !== null) {
      const i = files.findIndex((file) => file.size > maxFileBytes)
      const file = files[i]
      if (file !== undefined) {
        throw new QuotaExceeded(
          'largest_file',
          `"${file.name}" has ${file.size} bytes (${formatSize(file.size)}): more than the largest file this account may upload, ${maxFileBytes} bytes (${formatSize(maxFileBytes)}).`,
          'Send a smaller file, or ask an admin to raise the largest file.',
          `files[${i}].size`,
        )
      }
    }
    if (quotaBytes === null) return
    const asked = files.reduce((sum, file) => sum + file.size, 0)
    const used = usage.bytes + (await reserved(trx))
    if (used + asked > quotaBytes) {
      throw new QuotaExceeded(
        'quota',
        `These uploads (${asked} bytes, ${formatSize(asked)}) would pass the account's quota: ${used} bytes (${formatSize(used)}) are used of ${quotaBytes} (${formatSize(quotaBytes)}), counting the trash and uploads under way; ${Math.max(0, quotaBytes - used)} bytes are left.`,
        QUOTA_HINT,
      )
    }
  }

  #usage(usage: StoredUsage, settings: QuotaSettings): Usage {
    return {
      ...usage,
      quotaSetting: settings.unlimited ? 'unlimited' : settings.quotaBytes === null ? 'default' : 'own',
      quotaBytes: settings.unlimited ? null : (settings.quotaBytes ?? this.defaultQuotaBytes),
      maxFileBytes: settings.maxFileBytes,
    }
  }
}
