// What the public pages of links need: a file link's (`/s/{publicId}`) and a folder link's (`/sf/{publicId}`). The
// state of the link behind a public id, the bytes, preview and first lines of a file it opens, a folder link's
// files as they are now and its zip, the password (its guesses limited) and the passes that remember it, and
// counting views and downloads (the download limit), the same for both kinds of link. The public id is the
// capability: no account is involved.
import { hashSecret, verifyPassword } from '../../platform/auth/secrets.ts'
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Transactor } from '../../platform/db/database.ts'
import { WriteBatch } from '../../platform/db/write-batch.ts'
import { type FaultLog, type FileContent, fileContent, type ServedFile } from '../files/file-content.ts'
import type { FilePage, FilesRepository, StoredFile } from '../files/files.repository.ts'
import type { ShareState } from '../files/share-state.ts'
import { readTextHead, type TextHead } from '../files/text-head.ts'
import type { FilesZipService, ZipArchive } from '../files/zip/zip.service.ts'
import { audienceKey, type EventLog } from '../webhooks/events.ts'
import type { DownloadPassesRepository } from './download-passes.repository.ts'
import type { FolderShare, FolderSharesRepository, PublicFolderLinkRow } from './folder-shares.repository.ts'
import type { FolderShareEvents } from './folder-shares.service.ts'
import type { LinkPasses } from './link-passes.ts'
import type {
  Link,
  LinkTarget,
  PublicLinkRow,
  SharesRepository,
  ShareWithFile,
  Visit,
} from './shares.repository.ts'
import type { ShareEvents } from './shares.service.ts'

/** What every working link has, of a file or of a folder: what its password, passes and counting need. */
export interface LinkAccess {
  /** What the link opens: its page's events are `share.*` or `folder_share.*`. */
  target: LinkTarget
  shareId: string
  /** The owner's, whose webhooks may hear of the link's views and downloads. */
  accountId: string
  /** Whether the owner had an active webhook endpoint as the link was read, which may hear of its visits. */
  ownerHasWebhooks: boolean
  publicId: string
  /** Whether the page asks for a password before showing anything of what it shares. */
  hasPassword: boolean
  /** Whether downloads are limited in number; each then counts only while the limit is not reached. */
  limited: boolean
  /** Changes with the password, so that a new password ends the passes given for the old one. */
  passwordVersion: string
}

/** A file that a working link opens: a file link's file, or one of a folder link's files. */
export interface PublicLink extends LinkAccess {
  file: ServedFile
  preview: PublicLinkRow['preview']
  /**
   * What a download pass of this file is good for: the link, or for a folder link the link and this one file, so
   * that a pass granted for one file's bytes fetches no other's.
   */
  downloadScope: string
  /** For one of a folder link's files: the folder, whose page it belongs to. */
  folder?: { id: string; name: string }
}

/** A working folder link: what its page may show once any password has been given. */
export interface PublicFolderLink extends LinkAccess {
  folder: { id: string; name: string }
}

/** Why a link no longer works; its page says only that it does not. */
export type GoneReason = Exclude<ShareState, 'active'>

export type LinkState<L extends LinkAccess = PublicLink> =
  | { kind: 'unknown' }
  | { kind: 'gone'; reason: GoneReason }
  | { kind: 'open'; link: L }

/** What a count of attempts answers: whether one more may go ahead, and if not, how long until one may. */
export interface AttemptDecision {
  allowed: boolean
  /** Microseconds until one more attempt is allowed (0 when this one was). */
  retryAfterUs: number
}

/**
 * Attempts counted per bucket under one policy: wiring.ts hands over the app's rate-limit stores
 * (http/rate-limit-store.ts), shared by every process when the app's limits are (REDIS_URL).
 */
export type AttemptCounters = (policy: { limit: number; windowMs: number }) => {
  /** Counts one attempt and says whether it may go ahead. */
  hit(bucket: string): Promise<AttemptDecision>
}

/** The state of a link from its row. A link whose file or folder was deleted is gone with it: unknown. */
function stateOf<R extends { share: { state: ShareState } }, L extends LinkAccess>(
  row: R | undefined,
  link: (row: R) => L,
): LinkState<L> {
  if (!row) return { kind: 'unknown' }
  const { state } = row.share
  return state === 'active' ? { kind: 'open', link: link(row) } : { kind: 'gone', reason: state }
}

/** What every link row gives its working link. */
function accessOf(
  target: LinkTarget,
  row: { share: Link & { accountId: string; passwordHash: string | null }; ownerHasWebhooks: boolean },
): LinkAccess {
  const { share } = row
  return {
    target,
    shareId: share.id,
    accountId: share.accountId,
    ownerHasWebhooks: row.ownerHasWebhooks,
    publicId: share.publicId,
    hasPassword: share.passwordHash !== null,
    limited: share.maxDownloads !== null,
    passwordVersion: share.passwordHash === null ? '' : share.passwordHash.slice(-16),
  }
}

function linkOf(row: PublicLinkRow): PublicLink {
  const access = accessOf('file', row)
  return { ...access, file: row.file, preview: row.preview, downloadScope: access.shareId }
}

function folderLinkOf(row: PublicFolderLinkRow): PublicFolderLink {
  return { ...accessOf('folder', row), folder: row.share.folder }
}

/**
 * Password guesses: a burst of 10, then one a minute, per link; 30, then one every 20 s, per client address, so
 * that the guesses spent on one link do not lock the address out of every other link it was sent.
 */
const PASSWORD_ATTEMPTS_PER_LINK = { limit: 10, windowMs: 10 * 60_000 }
const PASSWORD_ATTEMPTS_PER_ADDRESS = { limit: 30, windowMs: 10 * 60_000 }

/** A pass for a cookie: its token and how long it lasts. */
export interface Pass {
  token: string
  maxAgeSeconds: number
}

/** A link's state for a browser that holds `passwordPass`: `locked` until its password has been given. */
export type UnlockedState<L extends LinkAccess = PublicLink> = LinkState<L> | { kind: 'locked'; link: L }

/** What a password given on a link's page comes to. */
export type Unlock =
  | Exclude<LinkState<LinkAccess>, { kind: 'open' }>
  /** The link asks for no password: nothing to unlock. */
  | { kind: 'unprotected'; link: LinkAccess }
  /** The right password: the pass that lets this browser in. */
  | { kind: 'unlocked'; link: LinkAccess; pass: Pass }
  | { kind: 'wrong' }
  /** Too many guesses, for the link or from the address; wait this long. */
  | { kind: 'throttled'; retryAfterSeconds: number }

/** Whether a download's bytes may be sent. */
export type DownloadAdmission =
  /**
   * Yes, `length` bytes from the start asked for: all of them, or on a limited link as many as its pass has
   * left. With a pass when the download was counted on a link whose downloads are limited; with `unsent` when
   * the bytes came from a pass, to give back those the client did not take (it went away).
   */
  | { kind: 'admitted'; length: number; pass?: Pass; unsent?(bytes: number): Promise<void> }
  /** No: the link's downloads have all been taken. */
  | { kind: 'exhausted' }
  /**
   * No: on a limited link, a range that skips byte 0 needs the pass of a download that was counted, with bytes
   * left: a pass is good for the file's size in all, whatever the ranges.
   */
  | { kind: 'start-from-beginning' }

/**
 * A visit to count, with the account whose webhooks may hear of it, whether it had any as its link was read, and
 * what the link opens (which says the events that tell of it).
 */
type AccountVisit = Visit & { accountId: string; ownerHasWebhooks: boolean; target: LinkTarget }

type VisitEvents = ShareEvents & FolderShareEvents

const VISIT_EVENTS = {
  file: { view: 'share.viewed', download: 'share.downloaded' },
  folder: { view: 'folder_share.viewed', download: 'folder_share.downloaded' },
} as const satisfies Record<LinkTarget, Record<Visit['kind'], keyof VisitEvents>>

export class PublicSharesService {
  readonly #transaction: Transactor
  readonly #shares: SharesRepository
  readonly #folderShares: FolderSharesRepository
  readonly #files: FilesRepository
  readonly #zips: FilesZipService
  readonly #events: EventLog<VisitEvents>
  readonly #visits: WriteBatch<AccountVisit, boolean>
  readonly #blobs: BlobStore
  readonly #passes: LinkPasses
  readonly #downloadPasses: DownloadPassesRepository
  readonly #passwordAttemptsPerLink: ReturnType<AttemptCounters>
  readonly #passwordAttemptsPerAddress: ReturnType<AttemptCounters>

  constructor(deps: {
    transaction: Transactor
    shares: SharesRepository
    folderShares: FolderSharesRepository
    /** A folder link's files, read as they are now. */
    files: FilesRepository
    /** A folder link's Download all. */
    zips: FilesZipService
    /** Records the links' views and downloads with the visits they tell of, in the same transaction. */
    events: EventLog<VisitEvents>
    blobs: BlobStore
    passes: LinkPasses
    downloadPasses: DownloadPassesRepository
    attempts: AttemptCounters
  }) {
    this.#transaction = deps.transaction
    this.#shares = deps.shares
    this.#folderShares = deps.folderShares
    this.#files = deps.files
    this.#zips = deps.zips
    this.#events = deps.events
    // Views and downloads come in bursts: those that arrive together are committed together (db/write-batch.ts).
    this.#visits = new WriteBatch((visits) => this.#commitVisits(visits), { maxItems: 1000 })
    this.#blobs = deps.blobs
    this.#passes = deps.passes
    this.#downloadPasses = deps.downloadPasses
    this.#passwordAttemptsPerLink = deps.attempts(PASSWORD_ATTEMPTS_PER_LINK)
    this.#passwordAttemptsPerAddress = deps.attempts(PASSWORD_ATTEMPTS_PER_ADDRESS)
  }

  /** The state of the file link behind a public id. */
  async open(publicId: string): Promise<LinkState> {
    const row = await this.#shares.byPublicId(publicId)
    return stateOf(row, linkOf)
  }

  /** The state of the folder link behind a public id. */
  async openFolder(publicId: string): Promise<LinkState<PublicFolderLink>> {
    const row = await this.#folderShares.byPublicId(publicId)
    return stateOf(row, folderLinkOf)
  }

  /**
   * The state of the file link for a browser holding `passwordPass` (its cookie's): a protected link is `locked`
   * until that is a current pass of its password.
   */
  async openUnlocked(publicId: string, passwordPass: string | undefined): Promise<UnlockedState> {
    return this.#unlocked(await this.open(publicId), passwordPass)
  }

  /** `openUnlocked` for a folder link. */
  async openFolderUnlocked(
    publicId: string,
    passwordPass: string | undefined,
  ): Promise<UnlockedState<PublicFolderLink>> {
    return this.#unlocked(await this.openFolder(publicId), passwordPass)
  }

  /**
   * `openUnlocked` for a download: a link whose downloads have all been taken is still open to the holder of a
   * pass of one of them (`downloadPass`), so that the last download allowed goes on in ranges, as a media player
   * fetches it; `admitDownload` then takes its bytes from that pass.
   */
  async openForDownload(
    publicId: string,
    passes: { password: string | undefined; download: string | undefined },
  ): Promise<UnlockedState> {
    const row = await this.#shares.byPublicId(publicId)
    const state = stateOf(row, linkOf)
    if (!row) return state
    return this.#openToPassHolder(state, linkOf(row), passes)
  }

  /**
   * One file of a folder link, for its page or (with the browser's download pass) its bytes: the folder's file as
   * it is now, or unknown when the file is not in the folder (any more). As `openForDownload`, a link whose
   * downloads have all been taken is still open for the bytes to the holder of a pass of that file's download.
   */
  async openFolderFile(
    publicId: string,
    fileId: string,
    passes: { password: string | undefined; download?: string | undefined },
  ): Promise<UnlockedState> {
    const row = await this.#folderShares.byPublicId(publicId)
    if (!row) return { kind: 'unknown' }
    const folderLink = folderLinkOf(row)
    const file = await this.#files.byId(folderLink.accountId, fileId)
    if (!file || file.folderId !== folderLink.folder.id) return { kind: 'unknown' }
    const link: PublicLink = {
      ...folderLink,
      file,
      preview: file.preview,
      downloadScope: `${folderLink.shareId}/${file.id}`,
      folder: folderLink.folder,
    }
    const state = stateOf(row, () => link)
    if (passes.download === undefined) return this.#unlocked(state, passes.password)
    return this.#openToPassHolder(state, link, { password: passes.password, download: passes.download })
  }

  async #openToPassHolder(
    state: LinkState,
    link: PublicLink,
    passes: { password: string | undefined; download: string | undefined },
  ): Promise<UnlockedState> {
    if (state.kind !== 'gone' || state.reason !== 'exhausted' || passes.download === undefined) {
      return this.#unlocked(state, passes.password)
    }
    const held = await this.#passes.verify(
      'download',
      passes.download,
      link.downloadScope,
      link.passwordVersion,
    )
    return held ? this.#unlocked({ kind: 'open', link }, passes.password) : state
  }

  async #unlocked<L extends LinkAccess>(
    state: LinkState<L>,
    passwordPass: string | undefined,
  ): Promise<UnlockedState<L>> {
    if (state.kind !== 'open' || !state.link.hasPassword) return state
    const { link } = state
    return (await this.#passes.verify('password', passwordPass, link.shareId, link.passwordVersion))
      ? state
      : { kind: 'locked', link }
  }

  /**
   * A password given for the link of `target`'s kind behind `publicId` from the client address `client` (as the
   * app's rate limits name it). Every guess is counted, right or wrong, per link and per address before it is
   * checked, so a guess past either limit costs no hashing. The right one gives the pass that lets this browser in.
   */
  async unlock(input: {
    target: LinkTarget
    publicId: string
    password: string
    client: string
  }): Promise<Unlock> {
    const state =
      input.target === 'file' ? await this.open(input.publicId) : await this.openFolder(input.publicId)
    if (state.kind !== 'open') return state
    const { link } = state
    if (!link.hasPassword) return { kind: 'unprotected', link }
    const decisions = await Promise.all([
      this.#passwordAttemptsPerLink.hit(`share-password:${link.shareId}`),
      this.#passwordAttemptsPerAddress.hit(`share-password-${input.client}`),
    ])
    if (!decisions.every((decision) => decision.allowed)) {
      const waitUs = Math.max(...decisions.map((decision) => decision.retryAfterUs))
      return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil(waitUs / 1_000_000)) }
    }
    const { password } = input
    const right =
      password.length > 0 &&
      password.length <= 256 &&
      (await this.#checkPassword(input.target, link.publicId, password))
    if (!right) return { kind: 'wrong' }
    return {
      kind: 'unlocked',
      link,
      pass: await this.#passes.issue('password', link.shareId, link.passwordVersion),
    }
  }

  /**
   * Whether the bytes of the link's file from `start` may be sent (`length` of them asked for), for a GET that
   * sends bytes (not HEAD, not a 304). A download that begins at byte 0 is counted, committed before this
   * resolves; on a link whose downloads are limited it is refused once they are all taken, and otherwise gives
   * this browser a download pass good for the file's size in bytes, this answer's included. A range that skips
   * byte 0 of a limited link needs that pass (`downloadPass`, its cookie's), and takes its bytes from it: a
   * media player seeking within one download goes on, but `bytes=0-0` counted once and `bytes=1-` again and
   * again gets one copy, not many.
   */
  async admitDownload(
    link: PublicLink,
    request: { start: number; length: number; downloadPass: string | undefined },
  ): Promise<DownloadAdmission> {
    const { length } = request
    if (request.start === 0) {
      if (!(await this.#countDownload(link))) return { kind: 'exhausted' }
      if (!link.limited) return { kind: 'admitted', length }
      const pass = await this.#passes.issue('download', link.downloadScope, link.passwordVersion)
      const passHash = hashSecret(pass.token)
      await this.#downloadPasses.create({
        passHash,
        shareId: link.shareId,
        bytes: link.file.size - length,
        expiresAt: Date.now() + pass.maxAgeSeconds * 1000,
      })
      return {
        kind: 'admitted',
        length,
        pass,
        unsent: (bytes) => this.#downloadPasses.giveBack(passHash, bytes),
      }
    }
    if (!link.limited) return { kind: 'admitted', length }
    const { downloadPass } = request
    if (
      downloadPass === undefined ||
      !(await this.#passes.verify('download', downloadPass, link.downloadScope, link.passwordVersion))
    ) {
      return { kind: 'start-from-beginning' }
    }
    const passHash = hashSecret(downloadPass)
    const taken = await this.#downloadPasses.take(passHash, length)
    if (taken === 0) return { kind: 'start-from-beginning' }
    return {
      kind: 'admitted',
      length: taken,
      unsent: (bytes) => this.#downloadPasses.giveBack(passHash, bytes),
    }
  }

  /** A page of the folder link's files as they are now, newest first, as the owner's list of the folder has them. */
  folderFiles(
    link: PublicFolderLink,
    page: { cursor?: string; limit: number },
  ): Promise<FilePage<StoredFile>> {
    return this.#files.list(link.accountId, {
      folderId: link.folder.id,
      cursor: page.cursor,
      limit: page.limit,
    })
  }

  /**
   * The folder link's files as one zip, for a GET: counted as one download, committed before this resolves;
   * undefined, with nothing opened, when the link's downloads have all been taken.
   */
  async folderZip(link: PublicFolderLink, log: FaultLog): Promise<ZipArchive | undefined> {
    if (!(await this.#countDownload(link))) return undefined
    return this.#zips.ofFolder(link.accountId, link.folder.id, log)
  }

  /** Counts a view of the page; resolves once it is committed. */
  async countView(link: LinkAccess): Promise<void> {
    const { shareId, accountId, ownerHasWebhooks, target } = link
    await this.#visits.add({ shareId, accountId, ownerHasWebhooks, target, kind: 'view', limited: false })
  }

  /**
   * Counts a download; resolves once it is committed, with false when the link's download limit had been
   * reached by then (the download must then be refused).
   */
  #countDownload(link: LinkAccess): Promise<boolean> {
    const { shareId, accountId, ownerHasWebhooks, limited, target } = link
    return this.#visits.add({ shareId, accountId, ownerHasWebhooks, target, kind: 'download', limited })
  }

  /**
   * Commits a batch of visits. When webhooks hear of some (looked up once for the batch, among the accounts that
   * had webhooks as their links were read), the visits are counted and their events recorded in one transaction:
   * one event per visit counted, carrying the link as the batch leaves it. Otherwise the counting goes as fast as
   * it can (SharesRepository.countVisits).
   */
  async #commitVisits(visits: AccountVisit[]): Promise<boolean[]> {
    const withWebhooks = visits.filter((visit) => visit.ownerHasWebhooks)
    if (withWebhooks.length === 0) return this.#shares.countVisits(visits)
    const accountIds = [...new Set(withWebhooks.map((visit) => visit.accountId))]
    // Only the types of the visits in the batch: a page's views alone ask for one.
    const types = [...new Set(withWebhooks.map((visit) => VISIT_EVENTS[visit.target][visit.kind]))]
    const audiences = await this.#events.audiences(accountIds, types)
    if (audiences.size === 0) return this.#shares.countVisits(visits)
    return this.#transaction(async (trx) => {
      const counted = await this.#shares.countVisits(visits, trx)
      const links = new Map<string, ShareWithFile | FolderShare | undefined>()
      const read = (visit: AccountVisit) =>
        visit.target === 'file'
          ? this.#shares.get(visit.accountId, visit.shareId, trx)
          : this.#folderShares.get(visit.accountId, visit.shareId, trx)
      const events: Parameters<EventLog<VisitEvents>['recordEach']>[1] = []
      for (const [i, visit] of visits.entries()) {
        const type = VISIT_EVENTS[visit.target][visit.kind]
        const audience = audiences.get(audienceKey(visit.accountId, type))
        if (!audience || !counted[i]) continue
        if (!links.has(visit.shareId)) links.set(visit.shareId, await read(visit))
        const item = links.get(visit.shareId)
        if (item) events.push({ audience, item } as (typeof events)[number])
      }
      await this.#events.recordEach(trx, events)
      return counted
    })
  }

  /** Whether `password` is the link's. Slow on purpose (scrypt): `unlock` limits the attempts first. */
  async #checkPassword(target: LinkTarget, publicId: string, password: string): Promise<boolean> {
    const row =
      target === 'file'
        ? await this.#shares.byPublicId(publicId)
        : await this.#folderShares.byPublicId(publicId)
    const hash = row?.share.passwordHash
    return hash !== null && hash !== undefined && (await verifyPassword(password, hash))
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

  /** The first `maxBytes` of the file as text, for a text preview; undefined when they are not text. */
  textHead(link: PublicLink, maxBytes: number, log: FaultLog): Promise<TextHead | undefined> {
    return readTextHead(this.content(link, log), maxBytes)
  }
}
