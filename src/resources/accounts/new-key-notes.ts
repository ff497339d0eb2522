// A new API key's secret on its way from the form that made it to the page that shows it once. The form's
// answer is a redirect (so that a reload or Back sends nothing again) with the secret in a short-lived cookie,
// sealed with AES-256-GCM under a key only the server holds (kept in the database, so that whichever process
// answers the redirected GET can open it) and bound to the account: the browser carries it, cannot read it,
// and the page that shows it clears it. Nothing but the key's hash is stored anywhere.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { ServerSecrets } from '../../platform/db/server-secrets.ts'

/** How long the note may wait for its page: the redirect is followed at once. */
export const NOTE_SECONDS = 120
const SECRET_NAME = 'new_key_note_secret'

export interface NewKeyNote {
  keyId: string
  secret: string
}

export class NewKeyNotes {
  readonly #secrets: ServerSecrets

  constructor(secrets: ServerSecrets) {
    this.#secrets = secrets
  }

  /** The sealed note of a key just made for `accountId`, for its cookie. */
  async seal(accountId: string, note: NewKeyNote): Promise<string> {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', await this.#secrets.key(SECRET_NAME), iv)
    cipher.setAAD(Buffer.from(accountId))
    const expires = Math.floor(Date.now() / 1000) + NOTE_SECONDS
    const plain = Buffer.from(JSON.stringify({ ...note, expires }))
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()])
    return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.')
  }

  /** The note, if `token` is one sealed here for this account and still current. */
  async open(accountId: string, token: string | undefined): Promise<NewKeyNote | undefined> {
    const [iv, sealed, tag, ...rest] = (token ?? '').split('.')
    if (!iv || !sealed || !tag || rest.length > 0) return undefined
    try {
      const decipher = createDecipheriv(
        'aes-256-gcm',
        await this.#secrets.key(SECRET_NAME),
        Buffer.from(iv, 'base64url'),
      )
      decipher.setAAD(Buffer.from(accountId))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()])
      const { keyId, secret, expires } = JSON.parse(plain.toString()) as NewKeyNote & { expires: number }
      return expires * 1000 > Date.now() ? { keyId, secret } : undefined
    } catch {
      // Tampered with, sealed for another account, or with another key: no note.
      return undefined
    }
  }
}
