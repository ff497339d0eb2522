// A sign-in with the provider in progress, between the start (which sends the browser to the provider) and the
// callback (where the provider sends it back): its `state`, `nonce` and PKCE `code_verifier`, and the page to go
// back to. Kept in a short-lived cookie sealed with AES-256-GCM under a key only the server holds (kept in the
// database, so whichever process of a fleet answers the callback can open it): the browser carries it and
// cannot read or change it, and nothing is stored on the server. A flow is good for FLOW_SECONDS.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { ServerSecrets } from '../../platform/db/server-secrets.ts'

/** How long a person may spend at the provider before coming back. */
export const FLOW_SECONDS = 10 * 60
const SECRET_NAME = 'sso_flow_secret'
/** Bound into every sealed flow, so that no other sealed value of the server opens as one. */
const PURPOSE = Buffer.from('coffer sso flow v1')

export interface SsoFlow {
  state: string
  nonce: string
  codeVerifier: string
  /** A path of this server (safeReturnTo checked it). */
  returnTo: string
}

export class SsoFlows {
  readonly #secrets: ServerSecrets

  constructor(secrets: ServerSecrets) {
    this.#secrets = secrets
  }

  async seal(flow: SsoFlow, now = Date.now()): Promise<string> {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', await this.#secrets.key(SECRET_NAME), iv)
    cipher.setAAD(PURPOSE)
    const expires = Math.floor(now / 1000) + FLOW_SECONDS
    const plain = Buffer.from(JSON.stringify({ ...flow, expires }))
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()])
    return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.')
  }

  /** The flow, if `token` is one sealed here and has not expired; undefined otherwise. */
  async open(token: string | undefined, now = Date.now()): Promise<SsoFlow | undefined> {
    const [iv, sealed, tag, ...rest] = (token ?? '').split('.')
    if (!iv || !sealed || !tag || rest.length > 0 || token === undefined || token.length > 4096)
      return undefined
    try {
      const decipher = createDecipheriv(
        'aes-256-gcm',
        await this.#secrets.key(SECRET_NAME),
        Buffer.from(iv, 'base64url'),
      )
      decipher.setAAD(PURPOSE)
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()])
      const flow = JSON.parse(plain.toString()) as SsoFlow & { expires: number }
      if (flow.expires * 1000 <= now) return undefined
      return {
        state: flow.state,
        nonce: flow.nonce,
        codeVerifier: flow.codeVerifier,
        returnTo: flow.returnTo,
      }
    } catch {
      // Changed by someone, sealed with another key, or not ours at all.
      return undefined
    }
  }
}
