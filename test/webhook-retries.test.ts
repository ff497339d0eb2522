// The retry schedule of webhook deliveries, on a clock the test moves: an endpoint that answers 500 to
// everything gets the attempts of about 5 s, 5 min, 30 min, 2 h, 5 h and 10 h after the one before, then daily,
// the last three days after the event; the delivery then fails for good, and the endpoint, failing for three
// days, is disabled with the reason, and its owner told by an email, queued in the transaction that disables it
// and sent to a real SMTP server, and in the app. The sender runs alone here (no app, so no sender on the real clock), on a real
// migrated database of each engine, against a real HTTP receiver.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { AuditEntriesRepository } from '../src/platform/audit/audit-entries.repository.ts'
import { AuditLog, SYSTEM } from '../src/platform/audit/audit-log.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { ServerSecrets } from '../src/platform/db/server-secrets.ts'
import { MailRepository } from '../src/platform/mail/mail.repository.ts'
import { MailSender } from '../src/platform/mail/mail-sender.job.ts'
import { EventsRepository } from '../src/resources/webhooks/events.repository.ts'
import { endpointDisabledMessage } from '../src/resources/webhooks/webhook-mail.ts'
import { WebhookSecrets } from '../src/resources/webhooks/webhook-secrets.ts'
import { WebhookSender } from '../src/resources/webhooks/webhook-sender.job.ts'
import { WebhooksRepository } from '../src/resources/webhooks/webhooks.repository.ts'
import { WebhooksService } from '../src/resources/webhooks/webhooks.service.ts'
import { wireAccounts } from '../src/wiring.ts'
import { lastEntry } from './support/audit.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { SmtpReceiver } from './support/smtp.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

const smtp = new SmtpReceiver()
const smtpUrl = await smtp.start()
after(() => smtp.stop())

for (const engine of ENGINES) {
  test(`a delivery that always fails: the schedule over three days, then the endpoint disabled [${engine}]`, async () => {
    const received: number[] = []
    const receiver = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        received.push(Date.now())
        response.statusCode = 500
        response.end('down')
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-retries-'))
    const database = await freshDatabase(engine, dataDir)
    const db = openDatabase({ dataDir, databaseUrl: database.url, poolSize: 2 })
    const log = {
      error: (details: object, message: string) => assert.fail(`${message} ${JSON.stringify(details)}`),
      warn: () => {},
    }
    let sender: WebhookSender | undefined
    try {
      await migrate(db)
      const account = await wireAccounts(db).accounts.create({ email: `retries-${engine}@example.com` })
      const events = new EventsRepository(db)
      const webhooks = new WebhooksRepository(db)
      const secrets = new WebhookSecrets(new ServerSecrets(db))
      const audit = new AuditLog({ entries: new AuditEntriesRepository(db), outsideRequests: SYSTEM })
      const service = new WebhooksService({ webhooks, events, secrets, allowPrivate: true, audit })
      const endpoint = await service.create(account.id, {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
        events: ['file.created'],
      })
      await service.ping(account.id, endpoint.id)

      const clock = { now: Date.now() }
      const mail = new MailRepository(db)
      sender = new WebhookSender({
        soleSender: false,
        events,
        webhooks,
        secrets,
        allowPrivate: true,
        now: () => clock.now,
        transaction: db.transaction,
        audit,
        onDisabled: async (disabled, reason) => {
          const message = endpointDisabledMessage(account.email, disabled, reason, 'http://coffer.test/page')
          return (trx) => mail.enqueue(trx, message).then(() => {})
        },
      })
      sender.start(log)
      const delivery = () =>
        db.kysely
          .selectFrom('webhook_deliveries')
          .select(['state', 'next_attempt_at', 'attempts'])
          .where('endpoint_id', '=', endpoint.id)
          .executeTakeFirstOrThrow()
      for (let step = 0; step < 20; step++) {
        await sender.poll()
        await sender.settled()
        const row = await delivery()
        if (row.state !== 'pending') break
        // The next attempt is not made a moment early.
        clock.now = Number(row.next_attempt_at) - 1
        await sender.poll()
        await sender.settled()
        assert.equal(Number((await delivery()).attempts), Number(row.attempts))
        clock.now = Number(row.next_attempt_at)
      }

      const attempts = await db.kysely
        .selectFrom('webhook_attempts')
        .select(['at', 'status'])
        .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
        .where('webhook_deliveries.endpoint_id', '=', endpoint.id)
        .orderBy('attempt')
        .execute()
      const at = attempts.map((attempt) => Number(attempt.at))
      const waits = at.slice(1).map((time, i) => time - (at[i] as number))
      const fixed = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 24 * HOUR, 24 * HOUR]
      assert.deepEqual(waits.slice(0, fixed.length), fixed)
      // The last, three days after the event.
      const event = await db.kysely
        .selectFrom('events')
        .select('created_at')
        .where('account_id', '=', account.id)
        .executeTakeFirstOrThrow()
      assert.equal(at.at(-1), Number(event.created_at) + 72 * HOUR)
      assert.equal(attempts.length, fixed.length + 2)
      assert.deepEqual([...new Set(attempts.map((attempt) => attempt.status))], [500])
      assert.equal(received.length, attempts.length)
      assert.equal((await delivery()).state, 'failed')

      const disabled = await webhooks.byId(endpoint.id)
      assert.equal(disabled?.isActive, false)
      assert.match(disabled?.disabledReason ?? '', /^Every delivery failed from /)
      // The audit log says the system turned it off, and why.
      const turnedOff = await lastEntry(db, account.id, 'webhook.changed')
      assert.deepEqual(turnedOff.actor, { type: 'system', id: null, name: null })
      assert.deepEqual(turnedOff.details.changed, ['isActive'])
      assert.equal(turnedOff.details.reason, 'failing')
      assert.match(String(turnedOff.details.failingSince), /^\d{4}-\d{2}-\d{2}T/)
      assert.equal(turnedOff.details.isActive, false)
      // Its owner is told, once, by email.
      const mailSender = new MailSender({
        mail,
        exclusively: db.exclusively,
        config: { smtpUrl, from: 'Coffer <coffer@example.com>', publicHost: 'coffer.test' },
      })
      await mailSender.sendDue()
      await mailSender.sendDue()
      await mailSender.stop()
      const [told, ...more] = await smtp.to(account.email, 1)
      assert.deepEqual(more, [])
      assert.equal(told?.subject, 'A webhook endpoint of your Coffer account was disabled')
      assert.deepEqual(told?.from?.value, [{ name: 'Coffer', address: 'coffer@example.com' }])
      assert.match(told?.messageId ?? '', /^<msg_[0-9a-z]+@coffer\.test>$/)
      assert.ok(told?.text?.includes(endpoint.url), told?.text)
      assert.ok(told?.text?.includes(disabled?.disabledReason ?? '?'), told?.text)
      // And in the app: every page's header marks it (web/layout.ts), from the owner's session.
      const { sessions } = wireAccounts(db)
      const { secret } = await sessions.start(account)
      assert.equal((await sessions.resume(secret))?.failedWebhooks, 1)
      // Enabled again, it starts afresh, and the mark is gone.
      const enabled = await service.update(account.id, endpoint.id, { isActive: true })
      assert.deepEqual([enabled.isActive, enabled.failingSince, enabled.disabledReason], [true, null, null])
      assert.equal((await sessions.resume(secret))?.failedWebhooks, 0)
    } finally {
      await sender?.stop()
      await db.close()
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
      await new Promise((resolve) => receiver.close(resolve))
    }
  })
}
