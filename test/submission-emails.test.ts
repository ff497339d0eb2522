// Owners told of submissions by email, as a real SMTP server receives it (parsed by mailparser): the first at
// once, then at most one every five minutes per request, gathering what arrived meanwhile; each submission told
// of once; the request's switch "Email me on each submission" (on by default, in the app's request form) stops
// them. The job that writes them is stopped here and run by the test, on a clock it gives. On both engines.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { TELL_AT_MOST_EVERY_MS } from '../src/resources/requests/submission-notices.job.ts'
import type { StartOptions } from './support/harness.ts'
import { call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { newRequest, publicIdOf } from './support/requests-helpers.ts'
import { SmtpReceiver } from './support/smtp.ts'
import { submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { WebClient } from './support/web-client.ts'

const smtp = new SmtpReceiver()
const smtpUrl = await smtp.start()
after(() => smtp.stop())

/** The submissions' uploads go through the blob endpoint: each engine's app listens on a port. */
function eachEngine(name: string, body: (ctx: () => ListeningContext) => void, options: StartOptions = {}) {
  for (const engine of ENGINES) {
    describe(`${name} [${engine}]`, () => {
      let context: ListeningContext | undefined
      before(async () => {
        context = await startListening(engine, options)
      })
      after(() => context?.stop())
      body(() => {
        assert.ok(context, 'app not started')
        return context
      })
    })
  }
}

eachEngine(
  'submission emails',
  (ctx) => {
    let account: TestAccount
    const tellDue = (inMs = 0) => {
      const job = ctx().app.jobs.submissionNotices
      assert.ok(job, 'the job runs when the server sends email')
      return job.tellDue(Date.now() + inMs)
    }
    const queuedFor = async (to: string) =>
      (
        await ctx()
          .db.kysely.selectFrom('mail_outbox')
          .select('subject')
          .where('to_address', '=', to)
          .execute()
      ).length

    before(async () => {
      // The test runs the job itself, on the clock it gives.
      await ctx().app.jobs.submissionNotices?.stop()
      account = await createAccount(ctx().app)
    })

    test('the first at once; then one every five minutes at most, gathering what arrived meanwhile', async () => {
      const { app } = ctx()
      const request = await newRequest(app, account.token, { title: 'Tax papers' })
      const publicId = publicIdOf(request)
      const sent = await submit(
        app,
        publicId,
        {
          submitterName: 'Ada Lovelace',
          submitterEmail: 'ada@example.com',
          message: 'Here they are.\nAll of them.',
        },
        [{ name: 'receipts.pdf', type: 'application/pdf', content: '%PDF-1.4 receipts' }],
      )
      assert.equal(sent.statuses[0]?.status, 'complete')
      await tellDue()
      const [first] = await smtp.to(account.email, 1)
      assert.equal(first?.subject, 'A file arrived at “Tax papers”: receipts.pdf')
      const text = first?.text ?? ''
      for (const expected of [
        'A file arrived at your file request “Tax papers”.',
        'receipts.pdf (17 bytes), from Ada Lovelace <ada@example.com>',
        '  > Here they are.',
        '  > All of them.',
        `/requests/${request.id}`,
      ]) {
        assert.ok(text.includes(expected), `${expected} in:\n${text}`)
      }

      // Two more within five minutes: gathered, not sent yet.
      for (const name of ['one.txt', 'two.txt']) {
        await submit(app, publicId, { submitterEmail: 'bob@example.com' }, [
          { name, type: 'text/plain', content: name },
        ])
      }
      await tellDue()
      await tellDue(TELL_AT_MOST_EVERY_MS - 60_000)
      assert.equal(await queuedFor(account.email), 1)
      // Five minutes after the first: one email with both.
      await tellDue(TELL_AT_MOST_EVERY_MS + 1000)
      const [, second] = await smtp.to(account.email, 2)
      assert.equal(second?.subject, '2 files arrived at “Tax papers”')
      assert.match(
        second?.text ?? '',
        /one\.txt \(7 bytes\), from <bob@example\.com>\n.*two\.txt \(7 bytes\), from <bob@example\.com>/,
      )
      // Each told of once.
      await tellDue(3 * TELL_AT_MOST_EVERY_MS)
      assert.equal(await queuedFor(account.email), 2)

      // Three files sent at once: one sending, its sender and message said once, its files under them.
      await submit(
        app,
        publicId,
        { submitterName: 'Cy', submitterEmail: 'cy@example.com', message: 'The three scans.' },
        [
          { name: 'scan-1.png', type: 'image/png', content: 'scan 1' },
          { name: 'scan-2.png', type: 'image/png', content: 'scan 2' },
          { name: 'scan-3.png', type: 'image/png', content: 'scan 3' },
        ],
      )
      await tellDue(4 * TELL_AT_MOST_EVERY_MS)
      const [, , third] = await smtp.to(account.email, 3)
      assert.equal(third?.subject, '3 files arrived at “Tax papers”')
      const thirdText = third?.text ?? ''
      assert.match(
        thirdText,
        /From Cy <cy@example\.com>, 3 files:\n- scan-\d\.png \(6 bytes\)\n- scan-\d\.png \(6 bytes\)\n- scan-\d\.png \(6 bytes\)\n {2}> The three scans\./,
      )
      assert.equal(thirdText.split('The three scans').length, 2, 'the message once')
    })

    test('the switch: on by default in the form, off stops the emails', async () => {
      const { app } = ctx()
      const owner = await createAccount(app)
      const request = await newRequest(app, owner.token, { title: 'Quiet' })
      // The app's form offers the switch, on for a new request and as the request has it.
      await app.services.accounts.setPassword(owner.id, 'a long enough password')
      const browser = await WebClient.signedIn(app, owner.email, 'a long enough password')
      assert.match((await browser.get('/requests/new')).body, /name="emailOwner" checked/)
      const edit = await browser.get(`/requests/${request.id}/edit`)
      assert.match(
        edit.body,
        /name="emailOwner" checked[^>]*>\s*<span><span class="check-title">Email me on each submission/,
      )
      // Saved without it: off.
      const saved = await browser.post(
        `/requests/${request.id}`,
        { title: 'Quiet', email: 'required' },
        `/requests/${request.id}/edit`,
      )
      assert.equal(saved.statusCode, 303, saved.body)
      assert.doesNotMatch(
        (await browser.get(`/requests/${request.id}/edit`)).body,
        /name="emailOwner" checked/,
      )

      await submit(app, publicIdOf(request), { submitterEmail: 'carol@example.com' }, [
        { name: 'quiet.txt', type: 'text/plain', content: 'shh' },
      ])
      await tellDue(TELL_AT_MOST_EVERY_MS * 2)
      assert.equal(await queuedFor(owner.email), 0)
      const submissions = await call(app, 'GET', `/api/v1/requests/${request.id}/submissions`, {
        token: owner.token,
      })
      assert.equal(submissions.body.data.length, 1, 'the submission itself was received')
    })
  },
  { env: { SMTP_URL: smtpUrl, MAIL_FROM: 'coffer@example.com' } },
)

eachEngine('without email', (ctx) => {
  test('no switch in the request form, no job, nothing queued', async () => {
    const { app } = ctx()
    assert.equal(app.jobs.submissionNotices, undefined)
    const owner = await createAccount(app)
    await app.services.accounts.setPassword(owner.id, 'a long enough password')
    const browser = await WebClient.signedIn(app, owner.email, 'a long enough password')
    assert.doesNotMatch((await browser.get('/requests/new')).body, /emailOwner/)
    const request = await newRequest(app, owner.token, { title: 'No mail here' })
    await submit(app, publicIdOf(request), { submitterEmail: 'dan@example.com' }, [
      { name: 'a.txt', type: 'text/plain', content: 'a' },
    ])
    const notices = await ctx().db.kysely.selectFrom('submission_notices').select('submission_id').execute()
    assert.deepEqual(notices, [])
  })
})
