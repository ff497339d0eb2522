// Client tokens in the format of the @vercel/blob library (docs/blob-protocol.md §3):
//   vercel_blob_client_<storeId>_<base64(hexHmac + "." + base64(json payload))>
// The client library only forwards them; this server signs them at the handshake and verifies them on every
// blob request. The payload is readable by its holder, so it carries no secret.
import { createHmac, timingSafeEqual } from 'node:crypto'

const PREFIX = 'vercel_blob_client_'
/** The store id the library reads from the token (`split('_')[3]`): it must not contain "_". */
export const STORE_ID = 'coffer'

export interface ClientTokenPayload {
  pathname: string
  /** Epoch milliseconds. */
  validUntil: number
  maximumSizeInBytes: number
  allowedContentTypes: string[]
  addRandomSuffix: false
  allowOverwrite: false
  /**
   * The upload intent the token belongs to (handleUpload of the library puts tokenPayload here too). A token has
   * no `onUploadCompleted`: the endpoint has the intent adopt its blob in-process, with no callback to send.
   */
  tokenPayload: string
}

const hmacHex = (key: Buffer, data: string) => createHmac('sha256', key).update(data).digest('hex')

export function signClientToken(key: Buffer, payload: ClientTokenPayload): string {
  const payloadB64 = Buffer.from(JSON.stringify(payload)).toString('base64')
  const signed = `${hmacHex(key, payloadB64)}.${payloadB64}`
  return `${PREFIX}${STORE_ID}_${Buffer.from(signed).toString('base64')}`
}

const isString = (v: unknown): v is string => typeof v === 'string'
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

function isPayload(v: unknown): v is ClientTokenPayload {
  if (typeof v !== 'object' || v === null) return false
  const p = v as Record<string, unknown>
  return (
    isString(p.pathname) &&
    isCount(p.validUntil) &&
    isCount(p.maximumSizeInBytes) &&
    Array.isArray(p.allowedContentTypes) &&
    p.allowedContentTypes.every(isString) &&
    isString(p.tokenPayload)
  )
}

/**
 * The payload of a token this server signed, or undefined for anything else: another format, another store,
 * a bad signature (compared in constant time) or a payload this server would not have written.
 */
export function verifyClientToken(key: Buffer, token: string): ClientTokenPayload | undefined {
  const storePrefix = `${PREFIX}${STORE_ID}_`
  if (!token.startsWith(storePrefix)) return undefined
  const signed = Buffer.from(token.slice(storePrefix.length), 'base64').toString('utf8')
  const dot = signed.indexOf('.')
  if (dot !== 64) return undefined
  const given = Buffer.from(signed.slice(0, dot), 'utf8')
  const payloadB64 = signed.slice(dot + 1)
  const expected = Buffer.from(hmacHex(key, payloadB64), 'utf8')
  // A forged prefix may hold multi-byte characters: compare lengths first, timingSafeEqual throws otherwise.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
  try {
    const payload: unknown = JSON.parse(Buffer.from(payloadB64, 'base64').toString('utf8'))
    return isPayload(payload) ? payload : undefined
  } catch {
    return undefined
  }
}
