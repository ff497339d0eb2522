// The passing of file requests' deadlines, as events: a request still open when its deadline passes closes then,
// and its owner's webhooks hear of it (request.closed, reason `deadline`). Nothing else happens at a deadline (the
// public page and the uploads check it themselves), so a request whose deadline passes while no webhook listens
// is only marked handled.
import { type AuditLog, SYSTEM } from '../../platform/audit/audit-log.ts'
import type { Exclusively, Transactor } from '../../platform/db/database.ts'
import { Periodic, type PeriodicLog } from '../../platform/jobs/periodic.ts'
import type { EventLog } from '../webhooks/events.ts'
import { requestStateOf } from './request-state.ts'
import type { RequestsRepository } from './requests.repository.ts'
import { type RequestEvents, requestAuditDetails } from './requests.service.ts'

/** How often the job looks for deadlines that passed: how late a request.closed of a deadline may be. */
export const DEADLINE_CHECK_INTERVAL_MS = 10_000

/** Requests handled in one transaction; more wait for the next. */
const DEADLINES_AT_ONCE = 500

export class RequestDeadlinesJob {
  readonly #transaction: Transactor
  readonly #requests: RequestsRepository
  readonly #events: EventLog<RequestEvents>
  readonly #exclusively: Exclusively
  readonly #audit: AuditLog
  readonly #schedule = new Periodic(() => this.handlePassed(), {
    intervalMs: DEADLINE_CHECK_INTERVAL_MS,
    failure: 'handling passed request deadlines failed',
  })

  constructor(deps: {
    transaction: Transactor
    requests: RequestsRepository
    events: EventLog<RequestEvents>
    exclusively: Exclusively
    /** Records request.closed (`deadline`, by the system), the requests of a pass in one statement. */
    audit: AuditLog
  }) {
    this.#transaction = deps.transaction
    this.#requests = deps.requests
    this.#events = deps.events
    this.#exclusively = deps.exclusively
    this.#audit = deps.audit
  }

  /** Handles the deadlines that have passed, in one process at a time; resolves when none is left. */
  async handlePassed(now = Date.now()): Promise<void> {
    await this.#exclusively('request-deadlines', async () => {
      while ((await this.#handleSome(now)) === DEADLINES_AT_ONCE) {}
    })
  }

  /**
   * One transaction: takes passed deadlines and records request.closed for each request still open then (not
   * disabled by its owner, nor full: those closed before, and said so). Returns how many it took.
   */
  #handleSome(now: number): Promise<number> {
    return this.#transaction(async (trx) => {
      const passed = await this.#requests.takePassedDeadlines(trx, now, DEADLINES_AT_ONCE)
      // Open the moment before its deadline: neither disabled nor full, which closed it before and said so.
      const closed = passed.filter(({ request }) => {
        const { deadlineAt } = request.limits
        return deadlineAt !== null && requestStateOf(request, deadlineAt - 1) === 'open'
      })
      for (const { accountId, request } of closed) {
        const audience = await this.#events.audience(trx, accountId, 'request.closed')
        if (audience) await this.#events.record(trx, audience, [{ request, reason: 'deadline' }])
      }
      await this.#audit.recordEach(
        trx,
        closed.map(({ accountId, request }) => ({
          accountId,
          kind: 'request.closed' as const,
          subjectId: request.id,
          details: { reason: 'deadline', ...requestAuditDetails(request) },
          actor: SYSTEM,
        })),
      )
      return passed.length
    })
  }

  start(log: PeriodicLog): void {
    this.#schedule.start(log)
  }

  stop(): Promise<void> {
    return this.#schedule.stop()
  }
}
