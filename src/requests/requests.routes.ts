import type { Routes } from '../http/plugin.ts'

// Filled in by the requests work: /requests and /requests/{requestId}/submissions.
export const requestsRoutes: Routes = async () => {}
