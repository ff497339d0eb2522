// A real SMTP server on 127.0.0.1 (smtp-server) that requires the credentials of its URL, and parses what it
// receives with mailparser, as a mail system would: what Coffer sends is checked as it arrives, not as it
// was handed to a library.
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'

export const SMTP_USER = 'coffer'
export const SMTP_PASSWORD = 'smtp password in the URL'

export class SmtpReceiver {
  readonly messages: ParsedMail[] = []
  /** The envelope's recipients of each message, in order. */
  readonly recipients: string[][] = []
  #server: SMTPServer | undefined
  #waiters: (() => void)[] = []

  /** Starts listening; resolves with the `smtp://` URL to give Coffer as SMTP_URL. */
  async start(): Promise<string> {
    this.#server = new SMTPServer({
      // No TLS on 127.0.0.1: plain SMTP, and the credentials sent in the clear (allowInsecureAuth).
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      onAuth: (auth, _session, done) =>
        auth.username === SMTP_USER && auth.password === SMTP_PASSWORD
          ? done(null, { user: auth.username })
          : done(new Error('Invalid username or password')),
      onData: (stream, session, done) => {
        simpleParser(stream)
          .then((parsed) => {
            this.messages.push(parsed)
            this.recipients.push(session.envelope.rcptTo.map((to) => to.address))
            for (const wake of this.#waiters.splice(0)) wake()
            done()
          })
          .catch(done)
      },
      logger: false,
    })
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve))
    const { port } = (this.#server as unknown as { server: { address(): AddressInfo } }).server.address()
    return `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${port}`
  }

  /** The messages to `to`, once there are `count` of them (within `ms`). */
  async to(to: string, count: number, ms = 15_000): Promise<ParsedMail[]> {
    const deadline = Date.now() + ms
    for (;;) {
      const matching = this.messages.filter((_, i) => this.recipients[i]?.includes(to))
      if (matching.length >= count) return matching
      const left = deadline - Date.now()
      assert.ok(left > 0, `${count} messages to ${to} within ${ms} ms; got ${matching.length}`)
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve)
        setTimeout(resolve, Math.min(left, 200))
      })
    }
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }
}
