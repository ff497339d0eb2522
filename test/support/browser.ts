/// <reference lib="dom" />
// Pages are tested as a person meets them: in Debian's Chromium, driven by playwright-core, on a phone-sized
// and a desktop-sized window, in light and dark; each screenshot is kept under .cache/screenshots for a
// person to look at, and each page is checked with axe-core. Without Chromium the tests skip, saying why;
// CI installs it, so CI never skips them.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { AxeBuilder } from '@axe-core/playwright'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import type { Engine } from '../../src/platform/db/engine.ts'

export const CHROMIUM = '/usr/bin/chromium'

/** Why the browser tests cannot run here, or undefined when they can. */
export const browserMissing = existsSync(CHROMIUM)
  ? undefined
  : `Chromium is not installed at ${CHROMIUM} (apt-get install chromium); .ci/run installs it`

const SCREENSHOTS = path.resolve(import.meta.dirname, '../../.cache/screenshots')

export const VIEWPORTS = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 900 },
} as const

export type Viewport = keyof typeof VIEWPORTS
export type Scheme = 'light' | 'dark'

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
}

/**
 * A fresh browser profile (no cookies) with a window of that size and colour scheme, in a time zone (the
 * machine's by default).
 */
export function newContext(
  browser: Browser,
  viewport: Viewport = 'desktop',
  scheme: Scheme = 'light',
  timezoneId?: string,
) {
  return browser.newContext({
    viewport: VIEWPORTS[viewport],
    colorScheme: scheme,
    deviceScaleFactor: viewport === 'phone' ? 2 : 1,
    acceptDownloads: true,
    ...(timezoneId ? { timezoneId } : {}),
  })
}

/** Serious and critical accessibility violations of the page, as readable lines; none is the goal. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze()
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help}; ${violation.nodes
          .map((node) => node.target.join(' '))
          .join(', ')}`,
    )
}

/** Asserts that axe finds no serious or critical violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  assert.deepEqual(await accessibilityViolations(page), [], `accessibility of ${what}`)
}

/** Saves a full-page screenshot as .cache/screenshots/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true })
  const file = path.join(SCREENSHOTS, `${name}.png`)
  await page.screenshot({ path: file, fullPage: true })
  return file
}

/**
 * The looks a page is checked in on `engine`: every one on SQLite; on PostgreSQL only the desktop in light,
 * since a page looks the same on both and only the data underneath differs (each look costs a screenshot and
 * an axe run, several seconds of CPU each: repeating them on the second engine checked nothing new).
 */
export function looksOn(engine: Engine): [Viewport, Scheme][] {
  return engine === 'sqlite'
    ? (Object.keys(VIEWPORTS) as Viewport[]).flatMap((viewport) =>
        (['light', 'dark'] as Scheme[]).map((scheme): [Viewport, Scheme] => [viewport, scheme]),
      )
    : [['desktop', 'light']]
}

/**
 * The page as it stands, on a phone and a desktop, light and dark (see looksOn): each screenshotted and
 * checked with axe. For pages reached through a flow (a consent page, say) that cannot be opened again in a
 * fresh context.
 */
export async function checkEveryLook(page: Page, name: string, engine: Engine): Promise<void> {
  const initial = page.viewportSize()
  for (const [viewport, scheme] of looksOn(engine)) {
    await page.setViewportSize(VIEWPORTS[viewport])
    await page.emulateMedia({ colorScheme: scheme })
    await screenshot(page, `${name}-${viewport}-${scheme}`)
    await assertAccessible(page, `${name} (${viewport}, ${scheme})`)
  }
  if (initial) await page.setViewportSize(initial)
  await page.emulateMedia({ colorScheme: 'light' })
}

/** Every request the page made, by URL, for checking that nothing left this server. */
export function recordRequests(context: BrowserContext): string[] {
  const urls: string[] = []
  context.on('request', (request) => urls.push(request.url()))
  return urls
}

/**
 * Opens `url` in each viewport and scheme (see looksOn), screenshots it, checks it with axe, and checks that every
 * request stayed on `origin`. `name` names the screenshots.
 */
export async function checkEverywhere(
  browser: Browser,
  url: string,
  name: string,
  origin: string,
  engine: Engine,
): Promise<void> {
  for (const [viewport, scheme] of looksOn(engine)) {
    const context = await newContext(browser, viewport, scheme)
    const requests = recordRequests(context)
    try {
      const page = await context.newPage()
      await page.goto(url)
      await screenshot(page, `${name}-${viewport}-${scheme}`)
      await assertAccessible(page, `${name} (${viewport}, ${scheme})`)
      const elsewhere = requests.filter(
        (request) => !request.startsWith(origin) && !request.startsWith('data:'),
      )
      assert.deepEqual(elsewhere, [], `${name} fetched nothing from elsewhere`)
    } finally {
      await context.close()
    }
  }
}

/** Lets the page send at most `bytesPerSecond`, so that an upload's progress can be watched; -1 lifts it. */
export async function throttleUploads(page: Page, bytesPerSecond: number): Promise<void> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: bytesPerSecond,
  })
}
