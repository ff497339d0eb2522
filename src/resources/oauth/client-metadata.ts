// What a client may register (RFC 7591) beyond what oidc-provider checks itself (issue 23, item 6). Its name
// and addresses are shown to people on the consent page and the connected-apps page, so they get the API's text
// rules and a length; a web client's redirect must be https (a loopback address excepted, for development),
// and no redirect may carry userinfo (`https://localhost@evil.example/cb` goes to evil.example).
import { errors } from 'oidc-provider'

/** The client's texts, with their longest length in characters. */
const TEXTS: Record<string, number> = {
  client_name: 100,
  client_uri: 2000,
  logo_uri: 2000,
  policy_uri: 2000,
  tos_uri: 2000,
}

/** The metadata checked here: oidc-provider calls `checkClientMetadata` once for each. */
export const CHECKED_CLIENT_METADATA = ['redirect_uris', ...Object.keys(TEXTS)]

/** C0 and C1 controls, which no registered text may hold (tab and line breaks neither). */
const CONTROL = /\p{Cc}/u
/**
 * Characters that show nothing themselves, or change how the text around them shows: format characters (Cf:
 * bidi controls such as U+202E, zero-width ones, the soft hyphen, tag characters), the rest of what Unicode
 * calls default-ignorable (U+034F, the Hangul fillers, variation selectors), and the line and paragraph
 * separators. A name or address made of them can pass for another. Emoji presentation selectors (U+FE0E,
 * U+FE0F) alone are kept: they only choose how an emoji shows.
 */
const INVISIBLE_PATTERN = '(?![\\uFE0E\\uFE0F])[\\p{Cf}\\p{Default_Ignorable_Code_Point}\\p{Zl}\\p{Zp}]'
const INVISIBLE = new RegExp(INVISIBLE_PATTERN, 'u')
const INVISIBLES = new RegExp(INVISIBLE_PATTERN, 'gu')

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

const refused = (message: string) => new errors.InvalidClientMetadata(message)

/** oidc-provider's `extraClientMetadata.validator`: throws what the registration answers with a 400. */
export function checkClientMetadata(key: string, value: unknown, metadata: Record<string, unknown>): void {
  if (value === undefined) return
  if (key === 'redirect_uris') {
    if (!Array.isArray(value)) return
    for (const uri of value) checkRedirect(uri, metadata.application_type === 'native' ? 'native' : 'web')
    return
  }
  const max = TEXTS[key]
  if (max === undefined || typeof value !== 'string') return
  if (value.length > max) throw refused(`${key} must be at most ${max} characters`)
  // Not well formed: a lone surrogate; U+FFFD: what bytes that were not UTF-8 became.
  if (!value.isWellFormed() || value.includes('\uFFFD') || CONTROL.test(value)) {
    throw refused(`${key} must be text without control characters`)
  }
  const invisible = INVISIBLE.exec(value)?.[0]
  if (invisible !== undefined) {
    const codePoint = `U+${(invisible.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
    throw refused(`${key} must not hold characters that show nothing or reorder text (it holds ${codePoint})`)
  }
}

function checkRedirect(uri: unknown, applicationType: 'web' | 'native'): void {
  if (typeof uri !== 'string') return
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return // oidc-provider refuses it, naming it.
  }
  if (url.username !== '' || url.password !== '') {
    throw new errors.InvalidRedirectUri('redirect_uris must not carry a user name or password')
  }
  if (
    applicationType === 'web' &&
    url.protocol !== 'https:' &&
    !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  ) {
    throw new errors.InvalidRedirectUri(
      'a web client must use https redirect_uris (http only to a loopback address)',
    )
  }
}

/**
 * A registered text (a name, an address) as a page shows it: without the characters that hide or reorder text
 * (`INVISIBLE`), so "Coffer \u202Egnp.exe\u202C Official" reads as it was typed, for a client registered before
 * they were refused; the page puts it in a `<bdi>` too, so that its direction cannot leak into the text around it.
 */
export function displayedClientText(text: string): string {
  return text.replace(INVISIBLES, '')
}

/**
 * What people are shown as an application's name, wherever they see it (the consent and device pages, connected
 * apps, the audit log): its registered name, else its client ID.
 */
export function displayedClientName(clientId: string, registeredName: unknown): string {
  return displayedClientText(typeof registeredName === 'string' ? registeredName : clientId)
}
