/// <reference lib="dom" />
// The share page as its recipients meet it, in Chromium: one link of each preview kind (an image, a video
// and a PDF made by the browser itself, a WAV tone, TypeScript source, a ZIP archive), each on a phone and a
// desktop, light and dark, screenshotted (.cache/screenshots) and checked with axe-core; the download button
// yields the very bytes uploaded; the counts moved by exactly what the browser did. The callbacks passed to
// `evaluate` run in the browser, hence the DOM types.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import {
  assertAccessible,
  browserMissing,
  checkEverywhere,
  launchBrowser,
  looksOn,
  newContext,
  screenshot,
} from './support/browser.ts'
import { call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { SAMPLE_SOURCE, samplePng, sampleWav, sampleZip } from './support/sample-files.ts'
import { type SharedFile, startSharingApp, uploadAndShare } from './support/shares.ts'
import type { ListeningContext } from './support/uploads.ts'

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** A PDF and a WebM video, made by Chromium: printing a page, and recording a canvas. */
async function browserMadeFiles(browser: Browser): Promise<{ pdf: Buffer; webm: Buffer }> {
  const context = await newContext(browser)
  try {
    const page = await context.newPage()
    await page.setContent('<h1>Quarterly numbers</h1><p>Revenue went up; costs went down.</p>')
    const pdf = await page.pdf({ format: 'A5' })
    const webm = await page.evaluate(async () => {
      const canvas = document.createElement('canvas')
      canvas.width = 320
      canvas.height = 180
      const paint = canvas.getContext('2d') as CanvasRenderingContext2D
      const recorder = new MediaRecorder(canvas.captureStream(25), { mimeType: 'video/webm' })
      const chunks: Blob[] = []
      recorder.ondataavailable = (event) => chunks.push(event.data)
      recorder.start()
      for (let frame = 0; frame < 25; frame++) {
        paint.fillStyle = `hsl(${frame * 14} 70% 50%)`
        paint.fillRect(0, 0, 320, 180)
        await new Promise((resolve) => setTimeout(resolve, 40))
      }
      recorder.stop()
      await new Promise((resolve) => {
        recorder.onstop = resolve
      })
      return [...new Uint8Array(await new Blob(chunks).arrayBuffer())]
    })
    return { pdf: Buffer.from(pdf), webm: Buffer.from(webm) }
  } finally {
    await context.close()
  }
}

interface Sample {
  kind: string
  name: string
  type: string
  bytes: Buffer
  /** What the preview area must hold. */
  preview: string
}

async function counts(ctx: ListeningContext, account: TestAccount, shareId: string) {
  const share = await call(ctx.app, 'GET', `/api/v1/shares/${shareId}`, { token: account.token })
  const analytics = await call(ctx.app, 'GET', `/api/v1/analytics?shareId=${shareId}`, {
    token: account.token,
  })
  assert.equal(share.body.data.viewCount, analytics.body.data.views)
  assert.equal(share.body.data.downloadCount, analytics.body.data.downloads)
  return { views: share.body.data.viewCount as number, downloads: share.body.data.downloadCount as number }
}

/** Clicks the page's Download button; resolves with the SHA-256 of what the browser saved. */
async function downloadWithButton(page: Page): Promise<string> {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download' }).click(),
  ])
  return sha256(await readFile(await download.path()))
}

for (const engine of ENGINES) {
  describe(`share pages in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let ctx: ListeningContext
    let browser: Browser
    let account: TestAccount
    let samples: Sample[]

    before(async () => {
      browser = await launchBrowser()
      ctx = await startSharingApp(engine)
      account = await createAccount(ctx.app)
      const { pdf, webm } = await browserMadeFiles(browser)
      samples = [
        {
          kind: 'image',
          name: 'Sunset over the bay.png',
          type: 'image/png',
          bytes: await samplePng(),
          preview: 'img',
        },
        { kind: 'video', name: 'Clip.webm', type: 'video/webm', bytes: webm, preview: 'video' },
        { kind: 'audio', name: 'Tone.wav', type: 'audio/wav', bytes: sampleWav(), preview: 'audio' },
        {
          kind: 'pdf',
          name: 'Quarterly numbers.pdf',
          type: 'application/pdf',
          bytes: pdf,
          preview: 'button',
        },
        {
          kind: 'text',
          name: 'greet.ts',
          type: 'text/plain',
          bytes: Buffer.from(SAMPLE_SOURCE),
          preview: 'pre',
        },
        {
          kind: 'archive',
          name: 'Photos.zip',
          type: 'application/zip',
          bytes: sampleZip({ 'a.txt': 'first', 'b.txt': 'second' }),
          preview: 'svg.file-icon',
        },
      ]
    })

    after(async () => {
      await browser?.close()
      await ctx?.stop()
    })

    test('each kind of file: previewed, accessible, downloaded byte for byte, counted exactly', async () => {
      // Each link is opened once per look by `checkEverywhere`.
      const looks = looksOn(engine).length
      for (const sample of samples) {
        const link = await uploadAndShare(ctx, account, sample)
        const url = `${ctx.base}${link.path}`
        await checkEverywhere(browser, url, `share-${engine}-${sample.kind}`, ctx.base, engine)
        // Opening a page counts a view and no download, whatever it previews: players load nothing until played.
        assert.deepEqual(
          await counts(ctx, account, link.shareId),
          { views: looks, downloads: 0 },
          sample.kind,
        )

        const context = await newContext(browser)
        try {
          const page = await context.newPage()
          await page.goto(url)
          assert.equal(await page.locator(`.preview ${sample.preview}`).count(), 1, `${sample.kind} preview`)
          assert.equal(await page.locator('h1').textContent(), sample.name)
          assert.equal(await downloadWithButton(page), sha256(sample.bytes), `${sample.kind} bytes`)
          assert.deepEqual(
            await counts(ctx, account, link.shareId),
            { views: looks + 1, downloads: 1 },
            sample.kind,
          )
        } finally {
          await context.close()
        }
      }
    })

    test('the players, the PDF viewer and the full-size image fetch the file when asked, and count it', async () => {
      const context = await newContext(browser)
      try {
        const page = await context.newPage()
        const byKind = new Map<string, SharedFile>()
        for (const sample of samples.filter((s) => ['image', 'video', 'pdf'].includes(s.kind))) {
          byKind.set(sample.kind, await uploadAndShare(ctx, account, sample))
        }
        const video = byKind.get('video') as SharedFile
        await page.goto(`${ctx.base}${video.path}`)
        await page.locator('video').evaluate((player: HTMLVideoElement) => {
          player.muted = true
          return player.play()
        })
        await page.waitForFunction(
          () => (document.querySelector('video') as HTMLVideoElement).readyState >= 2,
        )
        await screenshot(page, `share-${engine}-video-playing`)
        // The player's first fetch begins at byte 0 and counts; its later ranges do not.
        assert.deepEqual(await counts(ctx, account, video.shareId), { views: 1, downloads: 1 })

        const pdf = byKind.get('pdf') as SharedFile
        await page.goto(`${ctx.base}${pdf.path}`)
        await page.getByRole('button', { name: 'Show the PDF here' }).click()
        const frame = page.frameLocator('iframe')
        await page.waitForTimeout(1000)
        await screenshot(page, `share-${engine}-pdf-shown`)
        assert.equal(await page.locator('iframe').count(), 1)
        assert.equal(await frame.locator('body').count(), 1, 'the PDF viewer is shown, not blocked')
        assert.deepEqual(await counts(ctx, account, pdf.shareId), { views: 1, downloads: 1 })
        await assertAccessible(page, 'the PDF shown in the page')

        const image = byKind.get('image') as SharedFile
        await page.goto(`${ctx.base}${image.path}`)
        const preview = await page.locator('.preview img').evaluate((img: HTMLImageElement) => ({
          width: img.naturalWidth,
          loaded: img.complete,
        }))
        assert.deepEqual(preview, { width: 512, loaded: true })
        await page.locator('.preview a').click()
        await page.waitForLoadState()
        assert.equal(page.url(), `${ctx.base}${image.path}/download?disposition=inline`)
        const full = await page.evaluate(
          () => (document.querySelector('img') as HTMLImageElement).naturalWidth,
        )
        assert.equal(full, 640)
        assert.deepEqual(await counts(ctx, account, image.shareId), { views: 1, downloads: 1 })
      } finally {
        await context.close()
      }
    })

    test('names with markup, quotes, right-to-left text and emoji render as text; nothing runs', async () => {
      const name = `<script>window.ran=1</script><img src=x onerror="window.ran=2"> "q" 'q' שלום 🎉.txt`
      const link = await uploadAndShare(ctx, account, { name, type: 'text/plain', bytes: Buffer.from('hi') })
      const context = await newContext(browser, 'phone', 'dark')
      try {
        const page = await context.newPage()
        const dialogs: string[] = []
        page.on('dialog', (dialog) => {
          dialogs.push(dialog.message())
          void dialog.dismiss()
        })
        await page.goto(`${ctx.base}${link.path}`)
        assert.equal(await page.locator('h1').textContent(), name)
        assert.equal(await page.title(), `${name} · Coffer`)
        assert.equal(await page.evaluate(() => (window as unknown as { ran?: number }).ran), undefined)
        assert.equal(await page.locator('.card img').count(), 0)
        assert.deepEqual(dialogs, [])
        await screenshot(page, `share-${engine}-hostile-name`)
        await assertAccessible(page, 'a page with a hostile name')
      } finally {
        await context.close()
      }
    })

    test('by keyboard: skip link, Download, Copy link; the copy says so in a live region', async () => {
      const link = await uploadAndShare(ctx, account, {
        name: 'notes.txt',
        type: 'text/plain',
        bytes: Buffer.from('notes'),
      })
      const context = await newContext(browser)
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ctx.base })
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}${link.path}`)
        const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim())
        await page.keyboard.press('Tab')
        assert.equal(await focused(), 'Skip to content')
        await page.keyboard.press('Tab')
        assert.equal(await focused(), 'notes', 'the text preview can be scrolled by keyboard')
        await page.keyboard.press('Tab')
        assert.equal(await focused(), 'Download')
        const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')])
        assert.equal(sha256(await readFile(await download.path())), sha256(Buffer.from('notes')))
        await page.keyboard.press('Tab')
        assert.equal(await focused(), 'Copy link')
        await page.keyboard.press('Enter')
        await page.getByText('Link copied to the clipboard.').waitFor()
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link.publicUrl)
        assert.equal(await page.locator('[data-copy-status]').getAttribute('role'), 'status')
      } finally {
        await context.close()
      }
    })

    test('a Download after the link’s limit ran out shows why, instead of failing without a word', async () => {
      const link = await uploadAndShare(
        ctx,
        account,
        { name: 'Once only.txt', type: 'text/plain', bytes: Buffer.from('once') },
        { maxDownloads: 1 },
      )
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}${link.path}`)
        // While the page is open, someone else takes the one download the link allows.
        const elsewhere = await fetch(`${ctx.base}${link.path}/download`)
        assert.equal(await elsewhere.text(), 'once')
        // The press meets the limit, and the browser shows the 410 page instead of a failed download.
        await page.getByRole('link', { name: 'Download' }).click()
        await page.getByRole('heading', { name: 'This link is no longer available' }).waitFor()
        assert.match(
          await page.getByRole('main').innerText(),
          /downloaded as many times as its owner allowed/,
        )
      } finally {
        await context.close()
      }
    })

    test('the password form, wrong then right, and the error pages', async () => {
      const link = await uploadAndShare(
        ctx,
        account,
        { name: 'Board minutes.txt', type: 'text/plain', bytes: Buffer.from('minutes') },
        { password: 'correct horse' },
      )
      await checkEverywhere(browser, `${ctx.base}${link.path}`, `share-${engine}-password`, ctx.base, engine)
      const context = await newContext(browser, 'phone', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}${link.path}`)
        await page.getByLabel('Password').fill('wrong horse')
        await page.keyboard.press('Enter')
        await page.getByText('That is not the password of this link.').waitFor()
        await screenshot(page, `share-${engine}-password-wrong`)
        await assertAccessible(page, 'a wrong password')
        assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true')
        await page.getByLabel('Password').fill('correct horse')
        await page.getByRole('button', { name: 'Open' }).click()
        await page.getByRole('heading', { name: 'Board minutes.txt' }).waitFor()
        assert.equal(await downloadWithButton(page), sha256(Buffer.from('minutes')))
      } finally {
        await context.close()
      }

      await call(ctx.app, 'PATCH', `/api/v1/shares/${link.shareId}`, {
        token: account.token,
        body: { isActive: false },
      })
      await checkEverywhere(browser, `${ctx.base}${link.path}`, `share-${engine}-gone`, ctx.base, engine)
      await checkEverywhere(browser, `${ctx.base}/s/unknownlink`, `share-${engine}-unknown`, ctx.base, engine)
    })
  })
}
