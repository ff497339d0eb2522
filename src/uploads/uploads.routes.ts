import type { Routes } from '../http/plugin.ts'

// Filled in by the uploads work: POST /files and GET /files/uploads/{intentId}.
export const uploadsRoutes: Routes = async () => {}
