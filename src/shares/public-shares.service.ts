// What the public share page (`/s/{publicId}`) needs: the state of the link behind a public id, its file's
// bytes, preview and first lines, the password check and the passes that remember it, and counting views
// and downloads. The public id is the capability: no account is involved.
import { TextDecoder } from 'node:util'
import { verifyPassword } from '../auth/secrets.ts'
import type { BlobStore } from '../blob/blob-store.ts'
import { type FaultLog, type FileContent, fileContent, type ServedFile } from '../files/file-content.ts'
import type { LinkPasses, PassKind } from './link-passes.ts'
import type { PublicLinkRow, SharesRepository } from './shares.repository.ts'

/** A link that works: what its page may show once any password has been given. */
export interface PublicLink {
  shareId: string
  publicId: string
  file: ServedFile
  preview: PublicLinkRow['preview']
  /** Whether the page asks for a password before showing anything of the file. */
  hasPassword: boolean
  /** Whether downloads are limited in number; each then counts only while the limit is not reached. */
  limited: boolean
  /** Changes with the password, so that a new password ends the passes given for the old one. */
  passwordVersion: string
}

/** Why a link no longer works; its page says only that it does not. */
export type GoneReason = 'disabled' | 'expired' | 'exhausted'

export type LinkState =
  | { kind: 'unknown' }
  | { kind: 'gone'; reason: GoneReason }
  | { kind: 'open'; link: PublicLink }

/** The first bytes of a file shown as text, and whether there was more. */
export interface TextHead {
  text: string
  truncated: boolean
}

export class PublicSharesService {
  readonly #shares: SharesRepository
  readonly #blobs: BlobStore
  readonly #passes: LinkPasses

  constructor(deps: { shares: SharesRepository; blobs: BlobStore; passes: LinkPasses }) {
    this.#shares = deps.shares
    this.#blobs = deps.blobs
    this.#passes = deps.passes
  }

  /** The state of the link behind a public id. A link whose file was deleted is gone with it: unknown. */
  async open(publicId: string): Promise<LinkState> {
    const row = await this.#shares.byPublicId(publicId)
    if (!row) return { kind: 'unknown' }
    const { share } = row
    if (!share.isActive) return { kind: 'gone', reason: expiredOrDisabled(share) }
    if (share.maxDownloads !== null && share.downloadCount >= share.maxDownloads) {
      return { kind: 'gone', reason: 'exhausted' }
    }
    return {
      kind: 'open',
      link: {
        shareId: share.id,
        publicId: share.publicId,
        file: row.file,
        preview: row.preview,
        hasPassword: share.passwordHash !== null,
        limited: share.maxDownloads !== null,
        passwordVersion: share.passwordHash === null ? '' : share.passwordHash.slice(-16),
      },
    }
  }

  /** Counts a view of the page; resolves once it is committed. */
  async countView(link: PublicLink): Promise<void> {
    await this.#shares.countVisit({ shareId: link.shareId, kind: 'view', limited: false })
  }

  /**
   * Counts a download; resolves once it is committed, with false when the link's download limit had been
   * reached by then (the download must then be refused).
   */
  countDownload(link: PublicLink): Promise<boolean> {
    return this.#shares.countVisit({ shareId: link.shareId, kind: 'download', limited: link.limited })
  }

  /** Whether `password` is the link's. Slow on purpose (scrypt): callers limit the attempts first. */
  async checkPassword(publicId: string, password: string): Promise<boolean> {
    const row = await this.#shares.byPublicId(publicId)
    const hash = row?.share.passwordHash
    return hash !== null && hash !== undefined && (await verifyPassword(password, hash))
  }

  /** A pass for the link, for a cookie: proof that this browser gave its password, or was granted a download. */
  issuePass(link: PublicLink, kind: PassKind): Promise<{ token: string; maxAgeSeconds: number }> {
    return this.#passes.issue(kind, link.shareId, link.passwordVersion)
  }

  /** Whether `token` is a current pass of `kind` for the link. */
  checkPass(link: PublicLink, kind: PassKind, token: string | undefined): Promise<boolean> {
    return this.#passes.verify(kind, token, link.shareId, link.passwordVersion)
  }

  /** The file's bytes, to serve as a download. */
  content(link: PublicLink, log: FaultLog): FileContent {
    return fileContent(this.#blobs, link.file, log)
  }

  /** The image preview's bytes (a WebP), or undefined when the file has none. */
  previewContent(link: PublicLink, log: FaultLog): FileContent | undefined {
    const { preview, file } = link
    if (!preview) return undefined
    const served: ServedFile = {
      id: file.id,
      name: `${file.name}.webp`,
      contentType: preview.contentType,
      size: preview.size,
      // The preview of a file never changes, so the file's own validator names it too.
      sha256: file.sha256 === null ? null : `preview-${file.sha256}`,
      createdAt: file.createdAt,
      blobKey: preview.blobKey,
    }
    return fileContent(this.#blobs, served, log)
  }

  /**
   * The first `maxBytes` of the file decoded as UTF-8, for a text preview; undefined when they do not look
   * like text (a NUL byte, or many undecodable sequences). A character cut at the end is left out.
   */
  async textHead(link: PublicLink, maxBytes: number, log: FaultLog): Promise<TextHead | undefined> {
    const { file } = link
    if (file.size === 0) return { text: '', truncated: false }
    const end = Math.min(file.size, maxBytes) - 1
    const stream = await this.content(link, log).open({ start: 0, end })
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    const bytes = Buffer.concat(chunks)
    if (bytes.includes(0)) return undefined
    const text = new TextDecoder('utf-8', { fatal: false }).decode(withoutCutCharacter(bytes))
    const undecodable = text.split('\uFFFD').length - 1
    if (undecodable > text.length / 100 + 1) return undefined
    return { text, truncated: file.size > maxBytes }
  }
}

function expiredOrDisabled(share: { expiresAt: number | null }): GoneReason {
  return share.expiresAt !== null && share.expiresAt <= Date.now() ? 'expired' : 'disabled'
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
