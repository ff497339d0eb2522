// The webhook pages of the account settings as a person uses them, in Chromium: no endpoint yet, a mistake in the
// form shown beside its field, an endpoint added (its secret shown once, and it verifies what the receiver gets),
// a test event sent and seen among the deliveries with the receiver's answer, a failed delivery sent again with
// Retry, the secret rotated, the endpoint disabled and enabled, disabled after failing (marked in every page's
// header), then deleted after a confirmation. Every page and
// state is screenshotted on a phone and a desktop, light and dark (.cache/screenshots/webhooks-app-*), and
// checked with axe-core; the keyboard reaches every control.
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { WebhooksRepository } from '../src/resources/webhooks/webhooks.repository.ts'
import { browserMissing, checkEveryLook, launchBrowser, newContext } from './support/browser.ts'
import { ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

for (const engine of ENGINES) {
  describe(`webhook pages in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let c: ListeningContext
    let browser: Browser
    let page: Page
    let receiver: Server
    let receiverUrl: string
    const received: { headers: IncomingHttpHeaders; body: string }[] = []
    /** What the receiver answers next: a 500 once, when a test asks for it. */
    const failures: number[] = []
    const shot = (name: string) => checkEveryLook(page, `webhooks-app-${engine}-${name}`, engine)

    before(async () => {
      receiver = createServer((request, response) => {
        const chunks: Buffer[] = []
        request.on('data', (chunk: Buffer) => chunks.push(chunk))
        request.on('end', () => {
          received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') })
          const status = failures.shift()
          response.statusCode = status ?? 200
          response.end(status ? 'temporarily down' : 'thanks')
        })
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/coffer-events`
      c = await startListening(engine, { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } })
      browser = await launchBrowser()
      const owner = await newOwner(c.app)
      const context = await newContext(browser, 'desktop', 'light')
      page = await context.newPage()
      await signInBrowser(page, c.base, owner.email, { returnTo: '/account/webhooks' })
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
      await new Promise((resolve) => receiver?.close(resolve))
    })

    /** Reloads the endpoint's page until `text` shows (a delivery is recorded once the receiver answered). */
    const until = async (text: string) => {
      for (let i = 0; i < 50; i++) {
        if ((await page.locator('main').textContent())?.includes(text)) return
        await new Promise((resolve) => setTimeout(resolve, 200))
        await page.reload()
      }
      assert.fail(`"${text}" on the endpoint's page`)
    }

    test('an endpoint added through the form, its secret shown once and good for the deliveries', async () => {
      assert.equal(new URL(page.url()).pathname, '/account/webhooks')
      assert.match((await page.locator('main').textContent()) ?? '', /No webhook endpoints yet/)
      await shot('empty')

      // No event chosen: the form comes back with the problem beside the events, and what was typed.
      await page.getByLabel('URL').fill(receiverUrl)
      await page.getByLabel('Description').fill('Build server')
      await page.getByRole('button', { name: 'Add endpoint' }).click()
      assert.match((await page.locator('#field-events-error').textContent()) ?? '', /at least one event/)
      assert.equal(await page.getByLabel('URL').inputValue(), receiverUrl)
      await shot('refused')

      // By keyboard: tick two events and send.
      await page.getByRole('checkbox', { name: /file\.created/ }).focus()
      await page.keyboard.press('Space')
      await page.getByRole('checkbox', { name: /submission\.received/ }).focus()
      await page.keyboard.press('Space')
      await page.getByRole('button', { name: 'Add endpoint' }).focus()
      await page.keyboard.press('Enter')
      await page.waitForLoadState()
      const secret = (await page.locator('#new-secret-value').textContent()) ?? ''
      assert.match(secret, /^whsec_/)
      await shot('created')

      // Shown once: the list no longer has it.
      await page.goto(`${c.base}/account/webhooks`)
      assert.equal(await page.locator('#new-secret-value').count(), 0)
      await page.getByRole('link', { name: 'Build server' }).click()
      await page.waitForLoadState()
      assert.match((await page.locator('main').textContent()) ?? '', /No deliveries yet/)

      // A test event: its delivery is listed with the receiver's answer, and verifies with the secret.
      await page.getByRole('button', { name: 'Send a test event' }).click()
      await page.waitForLoadState()
      await until('Delivered')
      const ping = received.at(-1)
      assert.ok(ping)
      const event = new Webhook(secret).verify(ping.body, {
        'webhook-id': String(ping.headers['webhook-id']),
        'webhook-timestamp': String(ping.headers['webhook-timestamp']),
        'webhook-signature': String(ping.headers['webhook-signature']),
      }) as { type: string }
      assert.equal(event.type, 'webhook.ping')
      await page.getByText(/^Attempts of/).click()
      assert.match((await page.locator('.attempts').first().textContent()) ?? '', /200 in \d+ ms/)
      await shot('delivered')
    })

    test('a failed delivery, sent again with Retry; the secret rotated; disabled, enabled, deleted', async () => {
      failures.push(500, 500)
      await page.getByRole('button', { name: 'Send a test event' }).click()
      await page.waitForLoadState()
      await until('temporarily down')
      await shot('failed')
      const before = received.length
      await page
        .getByRole('button', { name: /^Retry the webhook\.ping delivery$/ })
        .first()
        .click()
      await page.waitForLoadState()
      assert.match((await page.locator('[role=status]').first().textContent()) ?? '', /sent again/)
      for (let i = 0; i < 50 && received.length === before; i++) await new Promise((r) => setTimeout(r, 100))
      assert.ok(received.length > before, 'the retry reached the receiver')

      await page.getByRole('button', { name: 'Rotate the secret' }).click()
      await page.waitForLoadState()
      assert.match((await page.locator('#new-secret-value').textContent()) ?? '', /^whsec_/)
      await shot('rotated')

      await page.getByRole('button', { name: 'Disable' }).click()
      await page.waitForLoadState()
      assert.match((await page.locator('main').textContent()) ?? '', /Disabled: nothing is sent to it/)
      assert.equal(await page.getByRole('button', { name: 'Send a test event' }).count(), 0)
      await shot('disabled')
      await page.getByRole('button', { name: 'Enable' }).click()
      await page.waitForLoadState()
      assert.match((await page.locator('[role=status]').first().textContent()) ?? '', /Endpoint enabled/)
      // Disabled by its owner, it is no news to them: nothing marks it.
      assert.equal(await page.locator('.attention-dot').count(), 0)

      // Disabled by Coffer after days of failures (as the sender does): every page's header marks it, on the
      // avatar and beside Webhooks in the menu, until the owner deals with it.
      const endpointId = new URL(page.url()).pathname.split('/').at(-1) ?? ''
      const reason = 'Every delivery failed from 2026-11-20 to 2026-11-23.'
      assert.ok(await new WebhooksRepository(c.db).disableFailing(endpointId, reason))
      await page.goto(`${c.base}/`)
      assert.equal(await page.locator('.avatar .attention-dot').count(), 1)
      assert.match(
        (await page.locator('.account-menu summary').textContent()) ?? '',
        /account menu, 1 webhook endpoint disabled/,
      )
      await page.locator('.account-menu summary').click()
      const menuLink = page.locator('.menu-panel a[href="/account/webhooks"]')
      assert.equal((await menuLink.textContent())?.replace(/\s+/g, ' '), 'Webhooks 1 disabled')
      await shot('failed-marked')
      await menuLink.click()
      await page.waitForLoadState()
      await page.getByRole('link', { name: 'Build server' }).click()
      await page.waitForLoadState()
      assert.match(
        (await page.locator('main').textContent()) ?? '',
        new RegExp(reason.replaceAll('.', '\\.')),
      )
      await page.getByRole('button', { name: 'Enable' }).click()
      await page.waitForLoadState()
      assert.equal(await page.locator('.attention-dot').count(), 0)

      await page.getByRole('link', { name: 'Delete' }).click()
      await page.waitForLoadState()
      await shot('delete')
      await page.getByRole('button', { name: 'Delete the endpoint' }).click()
      await page.waitForLoadState()
      assert.equal(new URL(page.url()).pathname, '/account/webhooks')
      assert.match(
        (await page.locator('main').textContent()) ?? '',
        /Endpoint deleted\.[\s\S]*No webhook endpoints yet/,
      )
    })
  })
}
