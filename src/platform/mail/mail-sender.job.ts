// Sends what the mail outbox holds through SMTP (nodemailer), in one process at a time, and tries the failures
// again for two days. A message is marked sent once the SMTP server has accepted it; a process that dies between
// the two sends it again after its restart (at least once, as the webhooks), with the same Message-ID, by which
// mail systems tell a repeat.
import { createTransport, type Transporter } from 'nodemailer'
import type { Exclusively } from '../db/database.ts'
import { Periodic } from '../jobs/periodic.ts'
import type { MailRepository, QueuedMessage } from './mail.repository.ts'

const MINUTE = 60_000
/** The waits before the second, third, … attempt; a message still failing two days after it was written is dropped. */
const RETRY_DELAYS_MS = [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * 60 * MINUTE, 6 * 60 * MINUTE]
const GIVE_UP_AFTER_MS = 2 * 24 * 60 * MINUTE
/** How often the outbox is read: how late a message may leave. */
export const MAIL_POLL_INTERVAL_MS = 2000
const MESSAGES_AT_ONCE = 50

export interface MailConfig {
  smtpUrl: string
  /** The From of every message: an address, or "Name <address>". */
  from: string
  /** Names the Message-ID's domain: the public URL's host. */
  publicHost: string
}

export interface MailLog {
  error(details: object, message: string): void
  warn(details: object, message: string): void
}

export function retryAt(attempts: number, createdAt: number, now: number): number | undefined {
  const next = now + (RETRY_DELAYS_MS[attempts - 1] ?? RETRY_DELAYS_MS.at(-1) ?? MINUTE)
  return next > createdAt + GIVE_UP_AFTER_MS ? undefined : next
}

export class MailSender {
  readonly #mail: MailRepository
  readonly #exclusively: Exclusively
  readonly #config: MailConfig
  readonly #transport: Transporter
  readonly #schedule = new Periodic(() => this.sendDue(), {
    intervalMs: MAIL_POLL_INTERVAL_MS,
    failure: 'sending email failed',
  })
  #log: MailLog | undefined

  constructor(deps: { mail: MailRepository; exclusively: Exclusively; config: MailConfig }) {
    this.#mail = deps.mail
    this.#exclusively = deps.exclusively
    this.#config = deps.config
    this.#transport = createTransport({
      url: deps.config.smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    })
  }

  /** Sends every message due now, one process at a time; resolves when done. */
  async sendDue(): Promise<void> {
    await this.#exclusively('mail', async () => {
      for (;;) {
        const due = await this.#mail.due(Date.now(), MESSAGES_AT_ONCE)
        for (const message of due) await this.#send(message)
        if (due.length < MESSAGES_AT_ONCE) return
      }
    })
  }

  async #send(message: QueuedMessage): Promise<void> {
    try {
      await this.#transport.sendMail({
        from: this.#config.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        messageId: `<${message.id}@${this.#config.publicHost}>`,
      })
      await this.#mail.markSent(message.id, Date.now())
    } catch (error) {
      const now = Date.now()
      const reason = error instanceof Error ? error.message : String(error)
      const next = retryAt(message.attempts + 1, message.createdAt, now)
      await this.#mail.markFailed(message.id, reason, now, next)
      // The address is the recipient's: the log says which message, not to whom.
      this.#log?.warn(
        { messageId: message.id, reason, willRetry: next !== undefined },
        'sending an email failed',
      )
    }
  }

  start(log: MailLog): void {
    this.#log = log
    this.#schedule.start(log)
  }

  async stop(): Promise<void> {
    await this.#schedule.stop()
    this.#transport.close()
  }
}
