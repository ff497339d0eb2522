// Builds everything the application runs on: the platform (the database, the blob store, the outboxes of mail
// and events), then every module's repositories, then their services and jobs in the modules' order
// (modules.ts). app.ts hands the services to the routes and starts and stops the jobs with the server.
import type { Built, EventPayloads, Jobs, Platform, Purge, Repositories, Services } from './module.ts'
import { modules } from './modules.ts'
import { AuditEntriesRepository } from './platform/audit/audit-entries.repository.ts'
import { ADMIN_COMMAND, AuditLog, SYSTEM } from './platform/audit/audit-log.ts'
import type { BlobStore } from './platform/blob/blob-store.ts'
import type { Config } from './platform/config.ts'
import type { Db } from './platform/db/database.ts'
import { ServerSecrets } from './platform/db/server-secrets.ts'
import type { Metrics } from './platform/http/metrics.ts'
import { MemoryRateLimitStore } from './platform/http/rate-limit-store.ts'
import { ExpiredRecordsPurge } from './platform/jobs/expired-records.job.ts'
import { type Job, type JobLog, JobRunner } from './platform/jobs/job.ts'
import { MailRepository } from './platform/mail/mail.repository.ts'
import { MailSender } from './platform/mail/mail-sender.job.ts'
import { PublicUrls } from './platform/public-urls.ts'
import { accountServices, accountsRepositories } from './resources/accounts/accounts.module.ts'
import type { AttemptCounters } from './resources/accounts/accounts.service.ts'
import { OauthRecordsRepository } from './resources/oauth/oauth-records.repository.ts'
import { ALL_EVENT_TYPES } from './resources/webhooks/event-types.ts'
import { EVENT_RETENTION_MS, type EventsRepository } from './resources/webhooks/events.repository.ts'
import { EventRecorder, type EventShapes } from './resources/webhooks/events.ts'

export interface Wiring {
  urls: PublicUrls
  services: Services
  jobs: Jobs
  /** Starts every background job; their faults go to `log`. */
  startJobs(log: JobLog): void
  /** Stops every background job and waits for the work under way, so nothing touches storage after it. */
  stopJobs(): Promise<void>
}

export interface WiringDeps {
  config: Config
  db: Db
  blobs: BlobStore
  /**
   * Where the services count attempts (failed sign-ins, a share link's passwords): the app passes its
   * rate-limit stores (platform/http/rate-limit.ts, in Redis with REDIS_URL); by default, this process's memory.
   */
  attempts?: AttemptCounters
  /** Where the blob store's operations and the jobs' runs are measured (platform/http/metrics.ts), when they are. */
  metrics?: Metrics
}

/** Attempts counted in this process only: for the admin command and benchmarks, which take no sign-in. */
const attemptsInMemory: AttemptCounters = (policy) => new MemoryRateLimitStore(policy)

export function wire({ config, db, attempts = attemptsInMemory, metrics, ...deps }: WiringDeps): Wiring {
  const urls = new PublicUrls(config.publicUrl)
  const repositories = repositoriesOf(db, config)
  const auditEntries = new AuditEntriesRepository(db)
  const platform: Platform = {
    config,
    db,
    urls,
    blobs: metrics?.measureBlobStore(deps.blobs) ?? deps.blobs,
    exclusively: metrics?.measureJobs(db.exclusively) ?? db.exclusively,
    serverSecrets: new ServerSecrets(db),
    attempts,
    mail: new MailRepository(db),
    events: eventRecorder(repositories.events, urls),
    audit: new AuditLog({ entries: auditEntries, outsideRequests: SYSTEM }),
  }
  const mailSender =
    config.mail &&
    new MailSender({
      mail: platform.mail,
      exclusively: platform.exclusively,
      config: { ...config.mail, publicHost: new URL(urls.origin).hostname },
    })
  const built: Built = { repositories, services: {} as Services, jobs: { mailSender } as Jobs }
  const moduleJobs: (Job | undefined)[] = []
  for (const module of modules) {
    const { services, jobs } = module.wire?.(platform, built) ?? {}
    Object.assign(built.services, services)
    Object.assign(built.jobs, jobs)
    moduleJobs.push(...Object.values(jobs ?? {}))
  }
  const purges: Record<string, Purge> = {
    'emails sent': () => platform.mail.purge(Date.now() - EVENT_RETENTION_MS),
    'audit entries': () => auditEntries.purge(Date.now() - config.auditRetentionDays * 86_400_000),
  }
  for (const module of modules) Object.assign(purges, module.purges?.(platform, built))
  built.jobs.expiredRecords = new ExpiredRecordsPurge(purges, platform.exclusively)

  // Each job after those it hands work to (JobRunner), which the modules' order gives: the mail sender before
  // everything that queues mail, the files' digests before upload processing; the expired records last, as
  // their purge of the trash hands the blob deletions the blobs of files deleted for good.
  const runner = new JobRunner([mailSender, ...moduleJobs, built.jobs.expiredRecords])
  return {
    urls,
    services: built.services,
    jobs: built.jobs,
    startJobs: (log) => runner.start(log),
    stopJobs: () => runner.stop(),
  }
}

/** Every module's repositories, built before any service: a module may hand another's to a port of its own. */
function repositoriesOf(db: Db, config: Config): Repositories {
  return Object.assign({}, ...modules.map((module) => module.repositories?.(db, config))) as Repositories
}

/**
 * Records the events of every module, in the API's shapes (each module's `eventShapes`, the serializers of its
 * routes). A type no module shapes is a fault found here, at start, rather than at its first event.
 */
function eventRecorder(events: EventsRepository, urls: PublicUrls) {
  const shapes = Object.assign({}, ...modules.map((module) => module.eventShapes?.(urls)))
  const unshaped = ALL_EVENT_TYPES.filter((type) => !(type in shapes))
  if (unshaped.length > 0) throw new Error(`No module shapes the events ${unshaped.join(', ')}.`)
  return new EventRecorder<EventPayloads>({ events, shapes: shapes as EventShapes<EventPayloads> })
}

/**
 * Accounts, their API keys, sessions and first-run setup, with nothing else of the application: what the admin
 * command manages, and what tests and benchmarks make accounts and keys with.
 */
export function wireAccounts(db: Db, attempts: AttemptCounters = attemptsInMemory) {
  // Run on the server's host, by its operator: what it changes is the admin command's doing.
  const audit = new AuditLog({ entries: new AuditEntriesRepository(db), outsideRequests: ADMIN_COMMAND })
  const repositories = { ...accountsRepositories(db), oauthRecords: new OauthRecordsRepository(db) }
  // It makes accounts itself: nobody signs up through it.
  const signUpPolicy = { policy: 'closed', emailDomains: undefined } as const
  return accountServices({
    db,
    serverSecrets: new ServerSecrets(db),
    attempts,
    audit,
    signUpPolicy,
    repositories,
  })
}
