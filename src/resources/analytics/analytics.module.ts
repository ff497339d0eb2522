// What share analytics bring to the application: their API and the owner's analytics page.
import type { Module } from '../../module.ts'
import { AnalyticsRepository } from './analytics.repository.ts'
import { analyticsRoutes } from './analytics.routes.ts'
import {
  AccountDailyAnalyticsSchema,
  AggregateAnalyticsSchema,
  ShareAnalyticsSchema,
  ShareDailyAnalyticsSchema,
  TopSharesSchema,
} from './analytics.schemas.ts'
import { AnalyticsService } from './analytics.service.ts'
import { analyticsAppRoutes } from './analytics-app.routes.ts'

declare module '../../module.ts' {
  interface Services {
    analytics: AnalyticsService
  }
}

export const analyticsModule: Module = {
  schemas: [
    ShareAnalyticsSchema,
    AggregateAnalyticsSchema,
    ShareDailyAnalyticsSchema,
    AccountDailyAnalyticsSchema,
    TopSharesSchema,
  ],
  apiRoutes: [analyticsRoutes],
  pageRoutes: [analyticsAppRoutes],
  wire: ({ db }) => ({
    services: { analytics: new AnalyticsService({ analytics: new AnalyticsRepository(db) }) },
  }),
}
