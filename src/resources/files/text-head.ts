// The first bytes of a file read as text, for a preview on a page: UTF-8 decoded, nothing shown when they do
// not look like text (a NUL byte, or many bytes that are not UTF-8), and a character cut at the end left out.
import { TextDecoder } from 'node:util'
import type { FileContent } from './file-content.ts'

/** The first bytes of a file shown as text, and whether there was more. */
export interface TextHead {
  text: string
  truncated: boolean
}

/** The first `maxBytes` of the file as text; undefined when they do not look like text. */
export async function readTextHead(content: FileContent, maxBytes: number): Promise<TextHead | undefined> {
  const { size } = content.file
  if (size === 0) return { text: '', truncated: false }
  const stream = await content.open({ start: 0, end: Math.min(size, maxBytes) - 1 })
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  const bytes = Buffer.concat(chunks)
  if (bytes.includes(0)) return undefined
  const text = new TextDecoder('utf-8', { fatal: false }).decode(withoutCutCharacter(bytes))
  const undecodable = text.split('\uFFFD').length - 1
  if (undecodable > text.length / 100 + 1) return undefined
  return { text, truncated: size > maxBytes }
}

/** The bytes without a UTF-8 sequence cut short at their end. */
function withoutCutCharacter(bytes: Buffer): Buffer {
  // A sequence is at most 4 bytes: look back at most 3 for its lead byte.
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] as number
    if ((byte & 0xc0) === 0x80) continue // a continuation byte: keep looking for the lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? bytes.subarray(0, bytes.length - back) : bytes
  }
  return bytes
}
