// Text that people write on several lines (a request's description, a submitter's message) is stored with one
// \n per line break, whatever sent it: a browser's form sends \r\n (the HTML standard's form encoding), an API
// client \n, an old Mac's file \r. Shared with the pages, which count what they send as the server does.

/** `text` with every line break (\r\n, \r or \n) as \n. */
export function withLfLineBreaks(text: string): string {
  return text.replace(/\r\n?/g, '\n')
}
