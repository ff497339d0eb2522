// Share analytics: a share's counts, or the account's totals (analytics.repository.ts).
import { notFound } from '../errors.ts'
import type { AggregateAnalytics, AnalyticsRepository, ShareAnalytics } from './analytics.repository.ts'

export class AnalyticsService {
  readonly #analytics: AnalyticsRepository

  constructor(deps: { analytics: AnalyticsRepository }) {
    this.#analytics = deps.analytics
  }

  async forShare(accountId: string, shareId: string): Promise<ShareAnalytics> {
    const analytics = await this.#analytics.forShare(accountId, shareId)
    if (!analytics) throw notFound(`Share ${shareId}`)
    return analytics
  }

  aggregate(accountId: string): Promise<AggregateAnalytics> {
    return this.#analytics.aggregate(accountId)
  }
}
