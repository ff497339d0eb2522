// The one layout of every page: document head, header, main landmark, footer, the stylesheet and the page
// module. Rendered with ghtml, whose `html` tag escapes every interpolated value; `!${…}` inserts a value as
// it is, and is used only for fragments that `html` itself produced (never for text that came from a user).
import { html } from 'ghtml'
import { formatSize } from '../format-size.shared.ts'
import { ASSETS_PATH, type AssetName, type Manifest } from './build.ts'

export interface Page {
  /** The document title; the page's `<h1>` is part of `main`. */
  title: string
  /** The page's content, made with `html`. */
  main: string
  /** More of the head, made with `html`: link-preview tags, say. */
  head?: string
  /** A one-line description for search engines and link previews. */
  description?: string
  /** Browser modules the page loads besides `page.js`. */
  scripts?: AssetName[]
  /** The navigation of a signed-in owner: set on every page of the app and the account pages. */
  nav?: AppNav
}

/** Where the signed-in owner is, and what the account menu needs. */
export interface AppNav {
  email: string
  /** The token of the sign-out form in the account menu. */
  csrfToken: string
  current?: 'files' | 'requests' | 'analytics' | 'admin' | 'account'
  /** An admin's navigation has the Admin section. */
  admin?: boolean
  /** Webhook endpoints Coffer disabled after their deliveries failed for days: marked on the menu until dealt with. */
  failedWebhooks?: number
  /** What the account stores (the trash included) against its quota (null: unlimited): the menu's bar. */
  usage?: { bytes: number; trashBytes: number; quotaBytes: number | null }
}

/**
 * The account's storage in its menu: what it stores of its quota as words and a bar (a `<meter>`, whose colour
 * turns at three quarters and at nine tenths), with what of it is in the trash, which counts until it is purged.
 */
function usagePanel(usage: NonNullable<AppNav['usage']>): string {
  const { bytes, trashBytes, quotaBytes } = usage
  const trash =
    trashBytes > 0 ? html`<p class="usage-trash">${formatSize(trashBytes)} of it in the trash</p>` : ''
  if (quotaBytes === null) {
    return html`<div class="menu-usage"><p>${formatSize(bytes)} stored</p>!${trash}</div>`
  }
  const percent = quotaBytes === 0 ? 100 : Math.min(100, Math.floor((bytes / quotaBytes) * 100))
  return html`<div class="menu-usage"><p id="menu-usage-text">${formatSize(bytes)} of ${formatSize(quotaBytes)} used (${percent}%)</p><meter class="usage-bar" aria-labelledby="menu-usage-text" min="0" max="${quotaBytes}" low="${Math.floor(quotaBytes * 0.75)}" high="${Math.floor(quotaBytes * 0.9)}" optimum="0" value="${Math.min(bytes, quotaBytes)}"></meter>!${trash}</div>`
}

/** The app's sections, in the order of the navigation. */
const SECTIONS = [
  { key: 'files', href: '/', label: 'Files' },
  { key: 'requests', href: '/requests', label: 'File requests' },
  { key: 'analytics', href: '/analytics', label: 'Analytics' },
] as const

/** The section an admin's navigation ends with: the server's accounts. */
const ADMIN_SECTION = { key: 'admin', href: '/admin/accounts', label: 'Admin' } as const

/** The account's pages, in its menu. */
const ACCOUNT_LINKS = [
  { href: '/account/keys', label: 'API keys' },
  { href: '/account/apps', label: 'Connected apps' },
  { href: '/account/webhooks', label: 'Webhooks' },
  { href: '/account/password', label: 'Password and sessions' },
] as const

/**
 * The header of a signed-in page: the sections, and the account's menu under its email (a disclosure that
 * works without scripts; page.client.ts closes it on Escape or a click elsewhere).
 */
function appHeader(nav: AppNav): string {
  const current = (key: string) => (nav.current === key ? html` aria-current="page"` : '')
  const failed = nav.failedWebhooks ?? 0
  const failedText = `${failed} webhook ${failed === 1 ? 'endpoint' : 'endpoints'} disabled`
  const badge = (href: string) =>
    href === '/account/webhooks' && failed > 0
      ? html` <span class="badge badge-warn" title="${failedText} after failing deliveries">${failed} disabled</span>`
      : ''
  return html`<header class="site-header app-header">
<a class="brand" href="/">!${LOGO}<span>Coffer</span></a>
<nav class="app-nav" aria-label="Main"><ul>!${[...SECTIONS, ...(nav.admin ? [ADMIN_SECTION] : [])].map(
    (section) => html`<li><a href="${section.href}"!${current(section.key)}>${section.label}</a></li>`,
  )}</ul></nav>
<details class="account-menu" data-menu>
<summary!${current('account')}><span class="avatar" aria-hidden="true">${(nav.email[0] ?? '?').toUpperCase()}!${failed > 0 ? html`<span class="attention-dot"></span>` : ''}</span><span class="account-name">${nav.email}</span><span class="sr-only"> (account menu!${failed > 0 ? html`, ${failedText}` : ''})</span></summary>
<div class="menu-panel">
<p class="menu-email">${nav.email}</p>
!${nav.usage ? usagePanel(nav.usage) : ''}
<ul>!${ACCOUNT_LINKS.map((link) => html`<li><a href="${link.href}">${link.label}!${badge(link.href)}</a></li>`)}</ul>
<form method="post" action="/account/sign-out"><input type="hidden" name="_csrf" value="${nav.csrfToken}"><button class="menu-button" type="submit">Sign out</button></form>
</div>
</details>
</header>`
}

/** The mark beside the name: a box with a lid, in the accent colour. Decorative, hidden from screen readers. */
const LOGO = html`<svg viewBox="0 0 32 32" aria-hidden="true" focusable="false"><rect x="3" y="9" width="26" height="19" rx="4" fill="currentColor" opacity=".16"/><rect x="3" y="9" width="26" height="19" rx="4" fill="none" stroke="currentColor" stroke-width="2.2"/><path d="M5 9.5 8.5 4h15L27 9.5" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linejoin="round"/><path d="M12.5 16h7" stroke="currentColor" stroke-width="2.4" stroke-linecap="round"/></svg>`

/** The same mark as the tab's icon, inline so that nothing is fetched for it. */
const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect x='3' y='9' width='26' height='19' rx='4' fill='%232154c4'/%3E%3Cpath d='M5 9.5 8.5 4h15L27 9.5' fill='none' stroke='%232154c4' stroke-width='2.4' stroke-linejoin='round'/%3E%3Cpath d='M12.5 16h7' stroke='%23fff' stroke-width='2.4' stroke-linecap='round'/%3E%3C/svg%3E"

export class Layout {
  readonly #manifest: Manifest

  constructor(manifest: Manifest) {
    this.#manifest = manifest
  }

  /** The URL of a built asset. */
  asset(name: AssetName): string {
    const file = this.#manifest.files[name]
    if (!file) throw new Error(`no built asset named ${name}`)
    return `${ASSETS_PATH}${file}`
  }

  render(page: Page): string {
    const scripts = ['page.js' as AssetName, ...(page.scripts ?? [])].map(
      (name) => html`<script type="module" src="${this.asset(name)}"></script>`,
    )
    return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${page.title}</title>
!${page.description ? html`<meta name="description" content="${page.description}">` : ''}
<link rel="icon" href="${FAVICON}">
<link rel="stylesheet" href="${this.asset('styles.css')}">
!${page.head ?? ''}
!${scripts}
</head>
<body!${page.nav ? ' class="app"' : ''}>
<a class="skip-link" href="#main">Skip to content</a>
!${page.nav ? appHeader(page.nav) : html`<header class="site-header"><span class="brand">!${LOGO}Coffer</span></header>`}
<main id="main">
!${page.main}
</main>
<footer class="site-footer">Coffer, self-hosted file sharing.</footer>
</body>
</html>
`
  }
}
