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

export type IdPrefix =
  | 'acc'
  | 'key'
  | 'ses'
  | 'fld'
  | 'fil'
  | 'shr'
  | 'req'
  | 'sub'
  | 'snd'
  | 'upl'
  | 'whk'
  | 'evt'
  | 'dlv'
  | 'msg'
  | 'inv'
  | 'aud'

/** The last ID's time and random part: IDs made in the same millisecond by this process keep their order. */
let lastTime = -1
const lastRandom = Buffer.alloc(10)

/**
 * A new ID made at `now`. Within one millisecond this process's IDs still sort in the order they were made
 * (lists are newest first by time, then ID): the random part of the previous one goes up by a random step
 * of up to 2^32, so they stay as hard to guess. Across processes, IDs of one millisecond sort at random.
 */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  const bytes = Buffer.alloc(16)
  // Bytes 0..5: the time, big-endian; bytes 6..15: random.
  bytes.writeUIntBE(now, 0, 6)
  if (now === lastTime && increase(lastRandom, randomBytes(4).readUInt32BE(0) + 1)) {
    lastRandom.copy(bytes, 6)
  } else {
    randomBytes(10).copy(bytes, 6)
    bytes.copy(lastRandom, 0, 6)
    lastTime = now
  }
  return `${prefix}_${base32(bytes)}`
}

/** Adds `step` to the big-endian number in `bytes`; false (and `bytes` unusable) if it overflows. */
function increase(bytes: Buffer, step: number): boolean {
  let carry = step
  for (let i = bytes.length - 1; i >= 0 && carry > 0; i--) {
    const sum = (bytes[i] as number) + (carry % 256)
    bytes[i] = sum % 256
    carry = Math.floor(carry / 256) + Math.floor(sum / 256)
  }
  return carry === 0
}

export function newPublicId(): string {
  return base32(randomBytes(20))
}
