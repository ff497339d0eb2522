// Detects a file's type from its first bytes, and decides which type to store. The declared type binds the
// transfer (the blob endpoint refuses another one), but what the bytes say wins when they contradict it.
import { essenceOf } from '../media-types.ts'

/** How many leading bytes `detectType` looks at. */
export const SNIFF_BYTES = 4096

const startsWith = (head: Buffer, bytes: number[], offset = 0) =>
  head.length >= offset + bytes.length && bytes.every((b, i) => head[offset + i] === b)
const ascii = (head: Buffer, text: string, offset = 0) =>
  startsWith(
    head,
    [...text].map((c) => c.charCodeAt(0)),
    offset,
  )

const ISO_BMFF_BRANDS: Record<string, string> = {
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  mif1: 'image/heif',
  msf1: 'image/heif',
  'qt  ': 'video/quicktime',
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
}

/** Formats recognised by a signature at a fixed place. */
function detectBinary(head: Buffer): string | undefined {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (ascii(head, 'GIF87a') || ascii(head, 'GIF89a')) return 'image/gif'
  if (ascii(head, 'RIFF') && ascii(head, 'WEBP', 8)) return 'image/webp'
  if (ascii(head, 'RIFF') && ascii(head, 'WAVE', 8)) return 'audio/wav'
  if (ascii(head, 'RIFF') && ascii(head, 'AVI ', 8)) return 'video/x-msvideo'
  if (ascii(head, 'ftyp', 4)) return ISO_BMFF_BRANDS[head.toString('latin1', 8, 12)] ?? 'video/mp4'
  if (ascii(head, '%PDF-')) return 'application/pdf'
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04]) || startsWith(head, [0x50, 0x4b, 0x05, 0x06]))
    return 'application/zip'
  if (startsWith(head, [0x1f, 0x8b])) return 'application/gzip'
  if (startsWith(head, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return 'application/x-7z-compressed'
  if (ascii(head, 'Rar!\x1a\x07')) return 'application/vnd.rar'
  if (startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) return 'video/webm'
  if (ascii(head, 'OggS')) return 'application/ogg'
  if (ascii(head, 'fLaC')) return 'audio/flac'
  if (ascii(head, 'ID3') || startsWith(head, [0xff, 0xfb]) || startsWith(head, [0xff, 0xf3]))
    return 'audio/mpeg'
  if (startsWith(head, [0x49, 0x49, 0x2a, 0x00]) || startsWith(head, [0x4d, 0x4d, 0x00, 0x2a]))
    return 'image/tiff'
  if (ascii(head, 'BM') && head.length >= 26 && head.readUInt32LE(14) >= 12) return 'image/bmp'
  if (startsWith(head, [0x00, 0x00, 0x01, 0x00])) return 'image/x-icon'
  if (ascii(head, 'wOF2')) return 'font/woff2'
  if (ascii(head, 'wOFF')) return 'font/woff'
  if (ascii(head, 'SQLite format 3\0')) return 'application/vnd.sqlite3'
  if (startsWith(head, [0x7f, 0x45, 0x4c, 0x46])) return 'application/x-elf'
  return undefined
}

/** Text if the head is valid UTF-8 (an incomplete last character is allowed) without control bytes. */
function isText(head: Buffer): boolean {
  if (head.length === 0) return false
  let i = startsWith(head, [0xef, 0xbb, 0xbf]) ? 3 : 0
  while (i < head.length) {
    const b = head[i] as number
    if (b < 0x80) {
      // Tab, line feed, form feed, carriage return and escape occur in text; other controls do not.
      if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b) return false
      if (b === 0x7f) return false
      i += 1
      continue
    }
    const length = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b <= 0xdf ? 2 : 0
    if (length === 0 || b > 0xf4) return false
    for (let k = 1; k < length; k++) {
      if (i + k >= head.length) return true
      if (((head[i + k] as number) & 0xc0) !== 0x80) return false
    }
    i += length
  }
  return true
}

/** The type the bytes show, or undefined when they show none. Text is `text/plain`. */
export function detectType(head: Buffer): string | undefined {
  return detectBinary(head) ?? (isText(head) ? 'text/plain' : undefined)
}

const ZIP_BASED = [
  /^application\/(x-zip-compressed|java-archive|vnd\.android\.package-archive)$/,
  /^application\/vnd\.(openxmlformats-officedocument|oasis\.opendocument|ms-)/,
  /\+zip$/,
]
const TEXTUAL = [
  /^text\//,
  /^application\/(json|xml|javascript|ecmascript|x-ndjson|sql|x-yaml|yaml|toml)$/,
  /\+(json|xml)$/,
]

/** Whether a declared type is a fair name for what `detected` found, e.g. a .docx is a ZIP. */
function consistent(declared: string, detected: string): boolean {
  if (declared === detected) return true
  switch (detected) {
    case 'text/plain':
      return TEXTUAL.some((re) => re.test(declared))
    case 'application/zip':
      return ZIP_BASED.some((re) => re.test(declared))
    case 'image/jpeg':
      return declared === 'image/jpg' || declared === 'image/pjpeg'
    case 'application/pdf':
      return declared === 'application/x-pdf'
    case 'application/gzip':
      return declared === 'application/x-gzip' || declared === 'application/x-tar'
    case 'audio/wav':
      return declared === 'audio/x-wav' || declared === 'audio/wave' || declared === 'audio/vnd.wave'
    case 'audio/mpeg':
      return declared === 'audio/mp3'
    case 'image/x-icon':
      return declared === 'image/vnd.microsoft.icon'
    case 'video/mp4':
    case 'video/quicktime':
    case 'audio/mp4':
      return /^(video|audio)\//.test(declared)
    case 'image/heic':
    case 'image/heif':
      return /^image\/hei[cf](-sequence)?$/.test(declared)
    case 'video/webm':
      return /^(video|audio)\/(webm|x-matroska)$/.test(declared)
    case 'application/ogg':
      return /^(audio|video)\/ogg$/.test(declared) || declared === 'audio/opus'
    default:
      return false
  }
}

/**
 * The type to store: the declared one, unless the bytes carry the signature of a different format (then the
 * detected type), or the declared type is the catch-all application/octet-stream and the bytes say more.
 * Text that merely looks like text never overrides a declared binary type it cannot be told apart from.
 */
export function chooseContentType(declared: string, detected: string | undefined): string {
  if (detected === undefined) return declared
  const declaredEssence = essenceOf(declared)
  if (declaredEssence === 'application/octet-stream') return detected
  if (consistent(declaredEssence, detected)) return declared
  if (detected === 'text/plain') {
    // Only a declared type whose own signature would have been seen is contradicted by plain text.
    return SIGNED_TYPES.has(declaredEssence) ? detected : declared
  }
  return detected
}

/** Declared types that `detectBinary` would recognise if the bytes were really of that type. */
const SIGNED_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/tiff',
  'image/bmp',
  'application/pdf',
  'application/zip',
  'audio/wav',
  'audio/mpeg',
  'audio/flac',
  'video/mp4',
  'video/webm',
  'video/quicktime',
])

/** Detected types sharp can read to make a preview. */
export const PREVIEWABLE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/tiff',
])
