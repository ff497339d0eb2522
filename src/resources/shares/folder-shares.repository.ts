// Folder links' SQL: the rows of `shares` that name a folder (migration 0033). What every link has (its state,
// settings, counts, passes) is read, changed and counted by SharesRepository's statements, by the link's id; here
// are the reads that join the folder, and the public page's lookup of a link by its public id.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../../platform/db/database.ts'
import { type Page, toPage } from '../../platform/db/pagination.ts'
import { idLookup } from '../../platform/db/read-path/id-lookup.ts'
import { prepare, preparePages } from '../../platform/db/read-path/prepared.ts'
import type { Database } from '../../platform/db/schema.ts'
import {
  activeEndpoints,
  LINK_COLUMNS,
  type Link,
  type LinkRow,
  ownerEnabled,
  reactivation,
  type ShareSettings,
  toLink,
} from './shares.repository.ts'

/** A folder's link: the API's FolderShare. */
export interface FolderShare extends Link {
  folderId: string
  folder: { id: string; name: string }
}

/** What the public page of a folder link needs: the link and its folder, in one read. */
export interface PublicFolderLinkRow {
  share: FolderShare & { accountId: string; passwordHash: string | null }
  /** Whether the owner had an active webhook endpoint as the link was read (SharesRepository's PublicLinkRow). */
  ownerHasWebhooks: boolean
}

type FolderShareRow = LinkRow & { folder_id: string; folder_name: string }

function toFolderShare(row: FolderShareRow, now: number): FolderShare {
  return {
    ...toLink(row, now),
    folderId: row.folder_id,
    folder: { id: row.folder_id, name: row.folder_name },
  }
}

/** shares ⋈ folders: a folder link with its folder is one read. */
function selectWithFolder(executor: Executor) {
  return (
    executor
      .selectFrom('shares')
      .innerJoin('folders', 'folders.id', 'shares.folder_id')
      .select([...LINK_COLUMNS, 'folders.id as folder_id', 'folders.name as folder_name'])
      // Said outright, so that both engines' planners take the partial index of folder links (migration 0033).
      .where('shares.folder_id', 'is not', null)
  )
}

/** The link of the account's folder, among those `query` reads. */
function ofFolder(query: ReturnType<typeof selectWithFolder>, accountId: string, folderId: string) {
  return query.where('shares.folder_id', '=', folderId).where('shares.account_id', '=', accountId)
}

export class FolderSharesRepository {
  readonly #db: Kysely<Database>
  readonly #listPage
  readonly #publicLink
  readonly #byFolder

  constructor(db: Db) {
    this.#db = db.kysely
    this.#listPage = preparePages(db, 'folder_shares_list', 'shares', 1, (accountId: string) =>
      selectWithFolder(this.#db).where('shares.account_id', '=', accountId),
    )
    // Read with every view of a folder's page in the app: compiled once.
    this.#byFolder = prepare(db, 'folder_link_by_folder', 2, (accountId: string, folderId: string) =>
      ofFolder(selectWithFolder(this.#db), accountId, folderId),
    )
    // Read on every visit of a public page: compiled once, and on PostgreSQL read together with the others of
    // the same turn (read-path/id-lookup.ts).
    this.#publicLink = idLookup(
      db,
      'folder_links_by_public_ids',
      (publicIds) =>
        selectWithFolder(this.#db)
          .select(['shares.account_id', (eb) => eb.exists(activeEndpoints(eb)).as('owner_has_webhooks')])
          // A disabled account's link answers as a link that never was.
          .where(ownerEnabled)
          .where('shares.public_id', 'in', publicIds),
      (row) => row.public_id,
    )
  }

  async list(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<FolderShare>> {
    const now = Date.now()
    const rows = await this.#listPage([accountId], page.cursor, page.limit)
    return toPage(rows, page.limit, (row) => toFolderShare(row, now))
  }

  async get(accountId: string, shareId: string, executor?: Executor): Promise<FolderShare | undefined> {
    const row = await selectWithFolder(executor ?? this.#db)
      .where('shares.id', '=', shareId)
      .where('shares.account_id', '=', accountId)
      .executeTakeFirst()
    return row && toFolderShare(row, Date.now())
  }

  /** The link of the account's folder, if it has one; read in `executor`'s transaction when given. */
  async byFolder(accountId: string, folderId: string, executor?: Executor): Promise<FolderShare | undefined> {
    const row = executor
      ? await ofFolder(selectWithFolder(executor), accountId, folderId).executeTakeFirst()
      : (await this.#byFolder(accountId, folderId))[0]
    return row && toFolderShare(row, Date.now())
  }

  /** Turns the folder's link back on, if it is disabled or expired; says whether it did. */
  async reactivate(
    accountId: string,
    folderId: string,
    settings: Omit<ShareSettings, 'isActive'> & { expiresAt: number | null },
    executor: Executor,
  ): Promise<boolean> {
    const result = await reactivation(
      executor,
      accountId,
      { folder: folderId },
      settings,
      Date.now(),
    ).executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
  }

  /** The folder link behind a public id, whatever its state, with its folder; undefined if none. */
  async byPublicId(publicId: string): Promise<PublicFolderLinkRow | undefined> {
    const row = await this.#publicLink(publicId)
    if (!row) return undefined
    return {
      share: {
        ...toFolderShare(row, Date.now()),
        accountId: row.account_id,
        passwordHash: row.password_hash,
      },
      ownerHasWebhooks: Boolean(row.owner_has_webhooks),
    }
  }
}
