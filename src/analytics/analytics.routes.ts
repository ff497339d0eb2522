import type { Routes } from '../http/plugin.ts'

// Filled in by the analytics work: GET /analytics.
export const analyticsRoutes: Routes = async () => {}
