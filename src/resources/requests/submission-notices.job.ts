// Telling owners of submissions by email: every few seconds, each request with submissions still to tell of gets
// one email listing them (who, their message, the files and their sizes, a link to the request's page), at most
// one every TELL_AT_MOST_EVERY_MS per request: what arrives meanwhile is gathered into the next. The submissions
// are taken and the email queued in one transaction (mail/mail.repository.ts), so each is told of once.
import type { Exclusively, Transactor } from '../../platform/db/database.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { Periodic, type PeriodicLog } from '../../platform/jobs/periodic.ts'
import type { MailMessage, QueueMail } from '../../platform/mail/mail.repository.ts'
import type { RequestsRepository, SubmissionsToTell } from './requests.repository.ts'
import { sendingsOf } from './sendings.ts'

/** At most one email per request this often. */
export const TELL_AT_MOST_EVERY_MS = 5 * 60_000
const CHECK_INTERVAL_MS = 5000
const REQUESTS_AT_ONCE = 100

export class SubmissionNoticesJob {
  readonly #transaction: Transactor
  readonly #requests: RequestsRepository
  readonly #exclusively: Exclusively
  readonly #ownerEmail: (accountId: string) => Promise<string | undefined>
  readonly #queueMail: QueueMail
  readonly #requestPage: (requestId: string) => string
  readonly #schedule = new Periodic(() => this.tellDue(), {
    intervalMs: CHECK_INTERVAL_MS,
    failure: 'telling owners of submissions failed',
  })

  constructor(deps: {
    transaction: Transactor
    requests: RequestsRepository
    exclusively: Exclusively
    /** The address of the account's owner; undefined for an account gone. */
    ownerEmail: (accountId: string) => Promise<string | undefined>
    queueMail: QueueMail
    /** The absolute URL of the request's page in the app. */
    requestPage: (requestId: string) => string
  }) {
    this.#transaction = deps.transaction
    this.#requests = deps.requests
    this.#exclusively = deps.exclusively
    this.#ownerEmail = deps.ownerEmail
    this.#queueMail = deps.queueMail
    this.#requestPage = deps.requestPage
  }

  /** Queues the emails due now, one process at a time. */
  async tellDue(now = Date.now()): Promise<void> {
    await this.#exclusively('submission-notices', async () => {
      for (;;) {
        const due = await this.#requests.requestsToTell(now - TELL_AT_MOST_EVERY_MS, REQUESTS_AT_ONCE)
        for (const { requestId, accountId } of due) await this.#tell(requestId, accountId, now)
        if (due.length < REQUESTS_AT_ONCE) return
      }
    })
  }

  async #tell(requestId: string, accountId: string, now: number): Promise<void> {
    // Read before the transaction, which on SQLite holds the one connection.
    const to = await this.#ownerEmail(accountId)
    await this.#transaction(async (trx) => {
      const told = await this.#requests.takeNotices(trx, requestId, now)
      if (told && to) await this.#queueMail(trx, submissionsMessage(to, told, this.#requestPage(requestId)))
    })
  }

  start(log: PeriodicLog): void {
    this.#schedule.start(log)
  }

  stop(): Promise<void> {
    return this.#schedule.stop()
  }
}

function submissionsMessage(to: string, told: SubmissionsToTell, page: string): MailMessage {
  const { submissions, title } = told
  const files = submissions.length === 1 ? 'A file' : `${submissions.length} files`
  const lines = [`${files} arrived at your file request “${title}”.`, '']
  // The files sent at once are said together, who sent them and their message once.
  for (const { first, submissions: sent } of sendingsOf(submissions)) {
    const who =
      [first.submitterName, first.submitterEmail && `<${first.submitterEmail}>`].filter(Boolean).join(' ') ||
      'Someone who gave no name'
    if (sent.length === 1) lines.push(`${first.file.name} (${formatSize(first.file.size)}), from ${who}`)
    else {
      lines.push(`From ${who}, ${sent.length} files:`)
      for (const { file } of sent) lines.push(`- ${file.name} (${formatSize(file.size)})`)
    }
    if (first.message) lines.push(...first.message.split('\n').map((line) => `  > ${line}`))
  }
  lines.push('', `See them on the request's page: ${page}`)
  lines.push('', 'You get at most one such email every five minutes per request; turn them off on its page.')
  return {
    to,
    subject:
      submissions.length === 1
        ? `A file arrived at “${title}”: ${submissions[0]?.file.name}`
        : `${submissions.length} files arrived at “${title}”`,
    text: lines.join('\n'),
  }
}
