// Browsers an account has signed in from: after a successful sign-in the browser keeps a token, signed with a key
// only the server holds (HMAC-SHA256, kept in the database so that every process accepts what any other issued),
// that names the account and when it ends. It grants nothing by itself; it only tells a sign-in from the owner's
// own browser apart from strangers' guesses, so that guesses spread over many addresses, which use up the
// account's allowance of failures, cannot lock the owner out (AccountsService.signIn).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ServerSecrets } from '../../platform/db/server-secrets.ts'

/** How long a browser stays known after its last sign-in. */
const DEVICE_SECONDS = 365 * 86_400
const SECRET_NAME = 'known_device_secret'
const TOKEN = /^(acc_[0-9a-z]{1,64})\.(\d{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/

export interface DeviceToken {
  token: string
  maxAgeSeconds: number
}

export class KnownDevices {
  readonly #secrets: ServerSecrets

  constructor(secrets: ServerSecrets) {
    this.#secrets = secrets
  }

  /** A token for a browser that has just signed in to the account. */
  async issue(accountId: string): Promise<DeviceToken> {
    const expires = Math.floor(Date.now() / 1000) + DEVICE_SECONDS
    const nonce = randomBytes(12).toString('base64url')
    const signature = await this.#sign(accountId, expires, nonce)
    return { token: `${accountId}.${expires}.${nonce}.${signature}`, maxAgeSeconds: DEVICE_SECONDS }
  }

  /** The account a browser's token was issued for, if it is one of ours and has not ended. */
  async accountOf(token: string | undefined): Promise<string | undefined> {
    const match = TOKEN.exec(token ?? '')
    if (!match) return undefined
    const [, accountId = '', expiresText = '', nonce = '', signature = ''] = match
    const expires = Number(expiresText)
    if (expires * 1000 <= Date.now()) return undefined
    const expected = Buffer.from(await this.#sign(accountId, expires, nonce))
    const given = Buffer.from(signature)
    return expected.length === given.length && timingSafeEqual(expected, given) ? accountId : undefined
  }

  async #sign(accountId: string, expires: number, nonce: string): Promise<string> {
    const key = await this.#secrets.key(SECRET_NAME)
    return createHmac('sha256', key).update(`device\n${accountId}\n${expires}\n${nonce}`).digest('base64url')
  }
}
