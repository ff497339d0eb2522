// Detects a file's type from its first bytes, and decides which type to store. The declared type binds the
// transfer (the blob endpoint refuses another one), but what the bytes say wins when they contradict it.
// Binary formats are named by file-type, which keeps their signatures; this file keeps what it does not do:
// telling text from binary, the few signatures it gives up on in a head of SNIFF_BYTES, the registered names
// Coffer has always stored where file-type's differ, and which declared type is a fair name for what it found.
import { fileTypeFromBuffer } from 'file-type'
import { essenceOf } from '../../platform/media-types.ts'

/** How many leading bytes `detectType` looks at. */
export const SNIFF_BYTES = 4096

const startsWith = (head: Buffer, bytes: number[]) =>
  head.length >= bytes.length && bytes.every((b, i) => head[i] === b)

/**
 * Where file-type's name differs from the registered one Coffer stores (and stored before it used file-type):
 * RAR, SQLite and M4A have registered types; AVI's common name is the one every browser knows; an M4V is an
 * MP4; the Opus codec is a parameter no other detected type carries.
 */
const REGISTERED_NAMES: Record<string, string> = {
  'application/x-rar-compressed': 'application/vnd.rar',
  'application/x-sqlite3': 'application/vnd.sqlite3',
  'audio/x-m4a': 'audio/mp4',
  'video/vnd.avi': 'video/x-msvideo',
  'video/x-m4v': 'video/mp4',
  'audio/ogg; codecs=opus': 'audio/ogg',
}

/**
 * Formats file-type confirms by following an offset, and so names nothing when it leads beyond the head: a
 * TIFF's first directory is often written after the pixels, an MP3's first frame after an ID3 tag that fills
 * the head. Their first bytes alone are signature enough, as they were before file-type.
 */
function detectBeyondHead(head: Buffer): string | undefined {
  if (startsWith(head, [0x49, 0x49, 0x2a, 0x00]) || startsWith(head, [0x4d, 0x4d, 0x00, 0x2a]))
    return 'image/tiff'
  if (startsWith(head, [0x49, 0x44, 0x33])) return 'audio/mpeg'
  return undefined
}

/**
 * What a head of text can be besides text. file-type tries signatures of two to four letters that text often
 * begins with ("BM", "MZ", "GIF", "FORM", "SQLi", "solid "), and names textual formats (XML, RTF, vCard) that
 * are stored as text. Two binary formats can have a head that is all text: a PDF, whose header and first
 * objects are often plain ASCII, and a GIF whose whole six-byte header ("GIF87a", "GIF89a") is all there is or
 * is followed by text; file-type's "GIF" alone is not enough ("GIFs are fun" is text).
 */
function binaryFormatOfText(head: Buffer, found: string | undefined): string | undefined {
  if (found === 'application/pdf') return found
  const gifHeader = head.subarray(0, 6).toString('latin1')
  if (found === 'image/gif' && (gifHeader === 'GIF87a' || gifHeader === 'GIF89a')) return found
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
export async function detectType(head: Buffer): Promise<string | undefined> {
  const found = (await fileTypeFromBuffer(head))?.mime
  if (isText(head)) return binaryFormatOfText(head, found) ?? 'text/plain'
  if (found === undefined) return detectBeyondHead(head)
  return REGISTERED_NAMES[found] ?? found
}

/** Formats inside a ZIP; file-type names those it can tell by their first entries, the rest are ZIPs. */
const ZIP_BASED = [
  /^application\/(x-zip-compressed|java-archive|vnd\.android\.package-archive|x-xpinstall|vnd\.visio)$/,
  /^application\/vnd\.(openxmlformats-officedocument|oasis\.opendocument|ms-|apple\.(keynote|numbers|pages))/,
  /\+zip$/,
  /^model\/3mf$/,
]
/** Formats inside a compound file (CFB): legacy Office documents, Outlook messages, installers. */
const CFB_BASED = /^application\/(msword|vnd\.ms-|vnd\.visio$|x-msi$|x-ole-storage$)/
const TEXTUAL = [
  /^text\//,
  /^application\/(json|xml|javascript|ecmascript|x-ndjson|sql|x-yaml|yaml|toml)$/,
  /\+(json|xml)$/,
]
/** Camera raw formats built on TIFF, which file-type tells apart by the tags of the first directory. */
const TIFF_BASED = new Set([
  'image/x-adobe-dng',
  'image/x-canon-cr2',
  'image/x-nikon-nef',
  'image/x-sony-arw',
])

/** Whether a declared type is a fair name for what `detected` found, e.g. a .docx is a ZIP. */
function consistent(declared: string, detected: string): boolean {
  if (declared === detected) return true
  if (detected === 'application/zip' || ZIP_BASED.some((re) => re.test(detected))) {
    // A ZIP's first entries name a document only when its packer writes them first: any declared ZIP-based
    // type stays, as it did when every one of them was detected as a ZIP.
    return declared === 'application/zip' || ZIP_BASED.some((re) => re.test(declared))
  }
  if (TIFF_BASED.has(detected)) return declared === 'image/tiff'
  switch (detected) {
    case 'text/plain':
      return TEXTUAL.some((re) => re.test(declared))
    case 'application/xml':
      return TEXTUAL.some((re) => re.test(declared))
    case 'application/x-cfb':
      return CFB_BASED.test(declared)
    case 'image/jpeg':
      return declared === 'image/jpg' || declared === 'image/pjpeg'
    case 'image/apng':
      return declared === 'image/png'
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
    case 'application/x-msdownload':
      return /^application\/(vnd\.microsoft\.portable-executable|x-msdos-program|x-dosexec)$/.test(declared)
    case 'video/mp4':
    case 'video/quicktime':
    case 'video/3gpp':
    case 'video/3gpp2':
    case 'audio/mp4':
      return /^(video|audio)\//.test(declared)
    case 'image/heic':
    case 'image/heif':
    case 'image/heic-sequence':
    case 'image/heif-sequence':
      return /^image\/hei[cf](-sequence)?$/.test(declared)
    case 'video/webm':
    case 'video/matroska':
      return /^(video|audio)\/(webm|x-matroska|matroska)$/.test(declared)
    case 'application/ogg':
    case 'audio/ogg':
    case 'video/ogg':
      return /^(audio|video|application)\/ogg$/.test(declared) || declared === 'audio/opus'
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

/** Declared types whose signature `detectType` would have seen if the bytes were really of that type. */
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

/**
 * Detected types sharp can read to make a preview. An animated PNG and the TIFF-based camera raws were tried
 * as a PNG and a TIFF before file-type named them apart; they still are (a raw sharp cannot read has none).
 */
export const PREVIEWABLE = new Set([
  'image/png',
  'image/apng',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/tiff',
  ...TIFF_BASED,
])
