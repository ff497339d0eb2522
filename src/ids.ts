// Identifiers: a type prefix, then 48 bits of millisecond time and 80 random bits in Crockford base32,
// so IDs sort by creation time and cannot be guessed. Public IDs (share and request links) are pure
// randomness: 160 bits.
import { randomBytes } from 'node:crypto'

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

function base32(bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31]
  return out
}

export type IdPrefix = 'acc' | 'key' | 'fld' | 'fil' | 'shr' | 'req' | 'sub' | 'upl'

export function newId(prefix: IdPrefix, now = Date.now()): string {
  const bytes = randomBytes(16)
  // Bytes 0..5: the time, big-endian; bytes 6..15: random.
  bytes.writeUIntBE(now, 0, 6)
  return `${prefix}_${base32(bytes)}`
}

export function newPublicId(): string {
  return base32(randomBytes(20))
}
