// Media types read as the WHATWG MIME Sniffing standard parses them (node:util's MIMEType), so that every place
// that looks at a Content-Type (what a download may show inline, what a page calls a file, whether an upload
// sends the type it declared) reads it alike, quoted parameters and odd case included.
import { MIMEType } from 'node:util'

/** `Text/HTML; charset=x` → `text/html`; '' for what is not a media type at all. */
export function essenceOf(contentType: string): string {
  try {
    return new MIMEType(contentType).essence
  } catch {
    return ''
  }
}
