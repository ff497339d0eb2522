// What the public share page (`/s/{publicId}`) needs: the working link behind a public id with its file, and
// counting the link's views and downloads. The public id is the capability: no account is involved.
import type { FilesRepository, StoredFile } from '../files/files.repository.ts'
import type { PublicUrls } from '../public-urls.ts'
import type { Share, SharesRepository } from './shares.repository.ts'

/** A working link, with the address of its page, and the whole file behind it. */
export interface PublicShare {
  share: Share & { publicUrl: string }
  file: StoredFile
}

export class PublicSharesService {
  readonly #shares: SharesRepository
  readonly #files: FilesRepository
  readonly #urls: PublicUrls

  constructor(deps: { shares: SharesRepository; files: FilesRepository; urls: PublicUrls }) {
    this.#shares = deps.shares
    this.#files = deps.files
    this.#urls = deps.urls
  }

  /** The link behind a public id, with its file, while the link works; otherwise undefined. */
  async find(publicId: string): Promise<PublicShare | undefined> {
    const found = await this.#files.byPublicShare(publicId)
    const summary = found?.file.share
    if (!found || !summary) return undefined
    const { id, isActive, expiresAt, viewCount, downloadCount } = summary
    return {
      share: {
        id,
        fileId: found.file.id,
        publicId,
        publicUrl: this.#urls.sharePage(publicId),
        isActive,
        expiresAt,
        viewCount,
        downloadCount,
        createdAt: found.shareCreatedAt,
      },
      file: found.file,
    }
  }

  /** Counts one view of the public page; an increment in SQL, so concurrent views are never lost. */
  recordView(shareId: string): Promise<void> {
    return this.#shares.countView(shareId)
  }

  /** Counts one download through the public link, atomically like `recordView`. */
  recordDownload(shareId: string): Promise<void> {
    return this.#shares.countDownload(shareId)
  }
}
