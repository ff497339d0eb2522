// What share analytics bring to the application: their API and the owner's analytics page.
import type { Module } from '../../routes.ts'
import { analyticsRoutes } from './analytics.routes.ts'
import {
  AccountDailyAnalyticsSchema,
  AggregateAnalyticsSchema,
  ShareAnalyticsSchema,
  ShareDailyAnalyticsSchema,
  TopSharesSchema,
} from './analytics.schemas.ts'
import { analyticsAppRoutes } from './analytics-app.routes.ts'

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
}
