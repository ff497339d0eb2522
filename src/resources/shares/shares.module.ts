// What share links bring to the application: links to a file and to a folder (their API, the owner's pages),
// and the public pages a link opens, with their passes for protected links.
import type { Module } from '../../module.ts'
import { DownloadPassesRepository } from './download-passes.repository.ts'
import { type FolderShare, FolderSharesRepository } from './folder-shares.repository.ts'
import { folderSharesRoutes } from './folder-shares.routes.ts'
import { FolderShareSchema, serializeFolderShare } from './folder-shares.schemas.ts'
import { type FolderShareEvents, FolderSharesService } from './folder-shares.service.ts'
import { LinkPasses } from './link-passes.ts'
import { PublicSharesService } from './public-shares.service.ts'
import { sharePagesRoutes } from './share-pages.routes.ts'
import { SharesRepository, type ShareWithFile } from './shares.repository.ts'
import { sharesRoutes } from './shares.routes.ts'
import {
  ShareSchema,
  ShareStateSchema,
  ShareWithFileSchema,
  serializeShareWithFile,
} from './shares.schemas.ts'
import { type ShareEvents, SharesService } from './shares.service.ts'
import { sharesAppRoutes } from './shares-app.routes.ts'

declare module '../../module.ts' {
  interface Repositories {
    shares: SharesRepository
    folderShares: FolderSharesRepository
    downloadPasses: DownloadPassesRepository
  }
  interface Services {
    shares: SharesService
    folderShares: FolderSharesService
    /** What a link's public pages do: open it, count its views and downloads, check its password. */
    publicShares: PublicSharesService
  }
  interface EventPayloads extends ShareEvents, FolderShareEvents {}
}

export const sharesModule: Module = {
  schemas: [ShareStateSchema, ShareSchema, ShareWithFileSchema, FolderShareSchema],
  apiRoutes: [sharesRoutes, folderSharesRoutes],
  pageRoutes: [sharePagesRoutes, sharesAppRoutes],
  repositories: (db) => ({
    shares: new SharesRepository(db),
    folderShares: new FolderSharesRepository(db),
    downloadPasses: new DownloadPassesRepository(db),
  }),
  wire: ({ db, blobs, events, audit, serverSecrets, attempts }, { repositories: r, services }) => {
    const { transaction } = db
    return {
      services: {
        shares: new SharesService({ transaction, shares: r.shares, files: r.files, events, audit }),
        folderShares: new FolderSharesService({
          transaction,
          shares: r.shares,
          folderShares: r.folderShares,
          folders: r.folders,
          events,
          audit,
        }),
        publicShares: new PublicSharesService({
          transaction,
          shares: r.shares,
          folderShares: r.folderShares,
          files: r.files,
          zips: services.zips,
          events,
          blobs,
          passes: new LinkPasses(serverSecrets),
          downloadPasses: r.downloadPasses,
          attempts,
        }),
      },
    }
  },
  purges: (_platform, { repositories }) => ({
    'download passes': () => repositories.downloadPasses.deleteExpired(),
  }),
  eventShapes: (urls) => {
    const share = (link: ShareWithFile) => serializeShareWithFile(link, urls)
    const folderShare = (link: FolderShare) => serializeFolderShare(link, urls)
    return {
      'share.created': share,
      'share.viewed': share,
      'share.downloaded': share,
      'folder_share.created': folderShare,
      'folder_share.viewed': folderShare,
      'folder_share.downloaded': folderShare,
    }
  },
}
