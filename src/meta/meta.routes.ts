import type { Routes } from '../http/plugin.ts'

// Filled in by the meta work: the capability index GET /api/v1/, /healthz, /readyz, /docs.
export const metaRoutes: Routes = async () => {}
