// How pages show numbers, dates and types to people.
import { essenceOf } from '../media-types.ts'

export { formatSize } from '../format-size.shared.ts'

// A files page shows a date, a size and counts on every row and a count beside every folder, 200 to 300 numbers
// and dates: through Intl's formatters they took a sixth of the page's CPU (bench:app's profile), so the common
// cases are written out here as Intl writes them for 'en'.
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** A date in UTC, "Nov 24, 2026" (Intl's medium date in English); pages let the browser show it in the
 * reader's own zone (page.client.ts). */
export function formatDate(ms: number): string {
  const date = new Date(ms)
  return `${MONTHS[date.getUTCMonth()]} ${date.getUTCDate()}, ${date.getUTCFullYear()}`
}

/** A date and time in UTC, "Nov 24, 2026, 09:05 UTC": what a page without scripts shows (page.client.ts shows
 * it in the reader's zone). */
export function formatDateTime(ms: number): string {
  const date = new Date(ms)
  const hh = String(date.getUTCHours()).padStart(2, '0')
  const mm = String(date.getUTCMinutes()).padStart(2, '0')
  return `${formatDate(ms)}, ${hh}:${mm} UTC`
}

const COUNT_FORMAT = new Intl.NumberFormat('en')

/** A count with its thousands grouped: "7", "12,345". */
export function formatCount(n: number): string {
  return Number.isSafeInteger(n) && n >= 0
    ? String(n).replace(/\B(?=(\d{3})+$)/g, ',')
    : COUNT_FORMAT.format(n)
}

/** Names people know for common types; others are shown as their media type. */
const TYPE_NAMES: Record<string, string> = {
  'application/pdf': 'PDF document',
  'application/zip': 'ZIP archive',
  'application/gzip': 'Gzip archive',
  'application/x-tar': 'Tar archive',
  'application/x-7z-compressed': '7-Zip archive',
  'application/json': 'JSON',
  'application/msword': 'Word document',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'Word document',
  'application/vnd.ms-excel': 'Excel spreadsheet',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'Excel spreadsheet',
  'application/vnd.ms-powerpoint': 'PowerPoint presentation',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'PowerPoint presentation',
  'application/octet-stream': 'Binary file',
  'text/plain': 'Text',
  'text/csv': 'CSV table',
  'text/markdown': 'Markdown text',
  'text/html': 'HTML document',
}

const FAMILY_NAMES: Record<string, string> = {
  image: 'image',
  video: 'video',
  audio: 'audio',
}

/** "PNG image", "PDF document", "MP4 video", or the media type itself. */
export function describeType(contentType: string): string {
  const essence = essenceOf(contentType)
  const known = TYPE_NAMES[essence]
  if (known) return known
  const [family = '', subtype = ''] = essence.split('/')
  const familyName = FAMILY_NAMES[family]
  if (familyName && /^[a-z0-9.+-]+$/.test(subtype)) {
    const name = subtype.replace(/^(x-|vnd\.)/, '').replace(/\+.*$/, '')
    return `${name.toUpperCase()} ${familyName}`
  }
  return essence || 'Unknown type'
}

/** The extension of a file name, upper-cased for an icon's label: "ZIP"; empty when there is none. */
export function extensionLabel(name: string): string {
  const match = /\.([A-Za-z0-9]{1,5})$/.exec(name)
  return match ? (match[1] as string).toUpperCase() : ''
}
