// What folders bring to the application: their API and their pages in the owner's app.
import { laterService, type Module } from '../../module.ts'
import { FoldersRepository } from './folders.repository.ts'
import { foldersRoutes } from './folders.routes.ts'
import { FolderSchema } from './folders.schemas.ts'
import { FoldersService } from './folders.service.ts'
import { foldersAppRoutes } from './folders-app.routes.ts'

declare module '../../module.ts' {
  interface Repositories {
    folders: FoldersRepository
  }
  interface Services {
    folders: FoldersService
  }
}

export const foldersModule: Module = {
  schemas: [FolderSchema],
  apiRoutes: [foldersRoutes],
  pageRoutes: [foldersAppRoutes],
  repositories: (db) => ({ folders: new FoldersRepository(db) }),
  wire: ({ db }, built) => ({
    services: {
      // What a folder holds (files, requests) and its link are other modules' records, reached through ports.
      folders: new FoldersService({
        transaction: db.transaction,
        folders: built.repositories.folders,
        contents: [built.repositories.files, built.repositories.requests],
        folderLink: laterService(built, 'folderShares'),
      }),
    },
  }),
}
