import type { Routes } from '../http/plugin.ts'

// Filled in by the shares work: GET/POST /shares, GET/PATCH /shares/{shareId}.
export const sharesRoutes: Routes = async () => {}
