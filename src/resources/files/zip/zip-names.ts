// The names of a zip's entries. A file's name is whatever its uploader typed, and an unpacking program writes
// each entry where its name says: "../../.bashrc", "/etc/passwd" or "C:\Windows\x" must not leave the folder
// it unpacks into, and two files called "report.pdf" must not overwrite each other. So every name becomes one
// plain file name (Coffer's folders are flat: a folder's zip puts every file at its top):
// - path separators (`/`, `\`) and the characters Windows forbids in names (`<>:"|?*`, so no drive letter
//   and no alternate data stream either) become `_`, as do control characters (C0, DEL, C1) and unpaired
//   surrogates; `.` and `..` alone become `_`; a name with nothing left is `file`;
// - characters that show nothing or reorder the name (format characters such as U+202E, which makes
//   "gnp\u202E.exe" read "exe.png"; the other default-ignorable ones) are dropped, and the name is in NFC, the
//   form most file systems keep (macOS shows NFC and NFD spellings of one name as one file);
// - usable on Windows: no trailing dots or spaces (Windows drops them), and a device name (CON, PRN, AUX, NUL,
//   COM1 to COM9, LPT1 to LPT9, with any extension: "nul.txt" is the device too) gets a `_` before it;
// - at most 255 bytes of UTF-8, the bound of common file systems, cut at a character and keeping the extension;
// - unique regardless of case and of Unicode normalization (Windows' and macOS's file systems ignore case, and
//   macOS normalization too): a name taken already gets " (2)", " (3)" ... before its extension, as browsers
//   name a second download.

const MAX_NAME_BYTES = 255
/** Control characters (Unicode's Cc: C0, DEL, C1), separators, and what Windows refuses in a name. */
const REPLACED = /[\p{Cc}/\\<>:"|?*]/gu
/** Characters that show nothing, or change how the name around them shows: dropped. */
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}]/gu
/** Windows' reserved device names, whatever the extension (superscript digits count as digits there). */
const DEVICE = /^(?:CON|PRN|AUX|NUL|COM[1-9\u00B9\u00B2\u00B3]|LPT[1-9\u00B9\u00B2\u00B3])(?:\.|$)/i

/** What two names that one file system would take as one have in common: NFC, and case folded. */
const sameFileKey = (name: string) => name.normalize('NFC').toLowerCase().toUpperCase().toLowerCase()

/** The extension kept when a name is cut or numbered: the last `.` part, unless it is the whole name. */
function splitExtension(name: string): [string, string] {
  const dot = name.lastIndexOf('.')
  // A dot at the start (".profile") is not an extension; a long "extension" is part of the name.
  if (dot <= 0 || name.length - dot > 16) return [name, '']
  return [name.slice(0, dot), name.slice(dot)]
}

/** The longest start of `text` that fits in `bytes` bytes of UTF-8, cut between characters. */
function cutToBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text
  let out = ''
  let used = 0
  for (const char of text) {
    const length = Buffer.byteLength(char)
    if (used + length > bytes) break
    out += char
    used += length
  }
  return out
}

function fitted(stem: string, extension: string): string {
  if (Buffer.byteLength(stem + extension) <= MAX_NAME_BYTES) return stem + extension
  return cutToBytes(stem, MAX_NAME_BYTES - Buffer.byteLength(extension)) + extension
}

/** One file name that stays where it is unpacked. */
export function safeEntryName(name: string): string {
  let safe = name.toWellFormed().normalize('NFC').replace(INVISIBLE, '').replace(REPLACED, '_').trim()
  if (safe === '.' || safe === '..') safe = '_'
  safe = safe.replace(/[. ]+$/, '')
  if (safe === '') safe = 'file'
  if (DEVICE.test(safe)) safe = `_${safe}`
  const [stem, extension] = splitExtension(safe)
  return fitted(stem, extension)
}

/** Makes the names of one archive safe and unique, in the order they come. Remembers every name it gave. */
export class EntryNames {
  readonly #taken = new Set<string>()
  /** The next number to try per name, so that a thousand "report.pdf" take linear time. */
  readonly #next = new Map<string, number>()

  name(original: string): string {
    const safe = safeEntryName(original)
    const key = sameFileKey(safe)
    if (!this.#taken.has(key)) {
      this.#taken.add(key)
      return safe
    }
    const [stem, extension] = splitExtension(safe)
    for (let n = this.#next.get(key) ?? 2; ; n++) {
      const suffix = ` (${n})`
      const candidate = fitted(
        cutToBytes(stem, MAX_NAME_BYTES - Buffer.byteLength(suffix + extension)) + suffix,
        extension,
      )
      const candidateKey = sameFileKey(candidate)
      if (!this.#taken.has(candidateKey)) {
        this.#taken.add(candidateKey)
        this.#next.set(key, n + 1)
        return candidate
      }
    }
  }
}
