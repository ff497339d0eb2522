// Passes for the public pages of protected links, kept by the browser in cookies: proof that it gave the
// link's password, or that it was granted a download of a link whose downloads are limited (so that a media
// player may go on fetching the rest of that download in ranges). A pass names its kind, its link and when
// it ends, and is signed with a key only the server holds (HMAC-SHA256), kept in the database so that every
// process accepts what any other issued. A pass for a password is also bound to that password: a new one
// ends every pass given for the old. Each pass is one of its own (a random nonce), so that a download pass
// can have a byte budget of its own (download-passes.repository.ts).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ServerSecrets } from '../../platform/db/server-secrets.ts'

export type PassKind = 'password' | 'download'

/** How long a pass lasts. */
const PASS_SECONDS: Record<PassKind, number> = {
  // A working day: the recipient who gave the password need not give it again for every visit.
  password: 12 * 3600,
  // Long enough to watch a film, pausing.
  download: 6 * 3600,
}

const SECRET_NAME = 'share_link_pass_secret'

export class LinkPasses {
  readonly #secrets: ServerSecrets

  constructor(secrets: ServerSecrets) {
    this.#secrets = secrets
  }

  async issue(
    kind: PassKind,
    shareId: string,
    version: string,
  ): Promise<{ token: string; maxAgeSeconds: number }> {
    const maxAgeSeconds = PASS_SECONDS[kind]
    const expires = Math.floor(Date.now() / 1000) + maxAgeSeconds
    const nonce = randomBytes(12).toString('base64url')
    const signature = await this.#sign(kind, shareId, version, expires, nonce)
    return { token: `${expires}.${nonce}.${signature}`, maxAgeSeconds }
  }

  async verify(
    kind: PassKind,
    token: string | undefined,
    shareId: string,
    version: string,
  ): Promise<boolean> {
    const match = /^(\d{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '')
    if (!match) return false
    const expires = Number(match[1])
    if (expires * 1000 <= Date.now()) return false
    const expected = Buffer.from(await this.#sign(kind, shareId, version, expires, match[2] as string))
    const given = Buffer.from(match[3] as string)
    return expected.length === given.length && timingSafeEqual(expected, given)
  }

  async #sign(
    kind: PassKind,
    shareId: string,
    version: string,
    expires: number,
    nonce: string,
  ): Promise<string> {
    const key = await this.#secrets.key(SECRET_NAME)
    return createHmac('sha256', key)
      .update(`${kind}\n${shareId}\n${version}\n${expires}\n${nonce}`)
      .digest('base64url')
  }
}
