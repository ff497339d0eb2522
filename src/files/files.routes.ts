import type { Routes } from '../http/plugin.ts'

// Filled in by the files work: GET/DELETE /files, GET/PATCH/DELETE /files/{fileId}, download.
export const filesRoutes: Routes = async () => {}
