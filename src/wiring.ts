// Builds everything the application runs on, in dependency order: repositories over the database, the
// services that hold the domain rules, and the background jobs. The one place that knows which part needs
// which; app.ts hands the services to the routes and starts and stops the jobs with the server.
import { AccountsRepository } from './accounts/accounts.repository.ts'
import { AccountsService, type AttemptCounters } from './accounts/accounts.service.ts'
import { ApiKeysRepository } from './accounts/api-keys.repository.ts'
import { ApiKeysService } from './accounts/api-keys.service.ts'
import { PasswordResetService } from './accounts/password-reset.service.ts'
import { PasswordResetsRepository } from './accounts/password-resets.repository.ts'
import { SessionsRepository } from './accounts/sessions.repository.ts'
import { SessionsService } from './accounts/sessions.service.ts'
import { SetupService } from './accounts/setup.service.ts'
import { SetupLinksRepository } from './accounts/setup-links.repository.ts'
import { sessionCookieName } from './accounts/web-sessions.ts'
import { AnalyticsRepository } from './analytics/analytics.repository.ts'
import { AnalyticsService } from './analytics/analytics.service.ts'
import type { BlobStore } from './blob/blob-store.ts'
import { BlobApiService } from './blob-api/blob-api.service.ts'
import { SigningKeyring } from './blob-api/signing-keys.ts'
import type { Config } from './config.ts'
import type { Db, Exclusively } from './db/database.ts'
import { ServerSecrets } from './db/server-secrets.ts'
import { EVENT_RETENTION_MS, EventsRepository } from './events/events.repository.ts'
import { EventRecorder } from './events/events.ts'
import { endpointDisabledMessage } from './events/webhook-mail.ts'
import { WebhookSecrets } from './events/webhook-secrets.ts'
import { type SenderLog, WebhookSender } from './events/webhook-sender.ts'
import { WebhooksRepository } from './events/webhooks.repository.ts'
import { WebhooksService } from './events/webhooks.service.ts'
import { FileDigestsService } from './files/file-digests.service.ts'
import { FilesRepository } from './files/files.repository.ts'
import { serializeFile } from './files/files.schemas.ts'
import { FilesService } from './files/files.service.ts'
import { NameIndexJob } from './files/name-index.service.ts'
import { FilesZipService } from './files/zip.service.ts'
import { FoldersRepository } from './folders/folders.repository.ts'
import { FoldersService } from './folders/folders.service.ts'
import type { Metrics } from './http/metrics.ts'
import { MemoryRateLimitStore } from './http/rate-limit-store.ts'
import { MailRepository } from './mail/mail.repository.ts'
import { MailSender } from './mail/mail-sender.ts'
import { HealthService } from './meta/health.service.ts'
import { AccessTokensService } from './oauth/access-tokens.service.ts'
import {
  type AuthorizationServer,
  createAuthorizationServer,
  type ProviderPages,
} from './oauth/authorization-server.ts'
import { ConnectedAppsService } from './oauth/connected-apps.service.ts'
import { OauthRecordsRepository } from './oauth/oauth-records.repository.ts'
import { PublicUrls } from './public-urls.ts'
import { PublicRequestsService } from './requests/public-requests.service.ts'
import { RequestDeadlinesJob } from './requests/request-deadlines.service.ts'
import { RequestsRepository } from './requests/requests.repository.ts'
import { serializeRequestWithCount, serializeSubmission } from './requests/requests.schemas.ts'
import { RequestsService } from './requests/requests.service.ts'
import { SubmissionNoticesJob } from './requests/submission-notices.service.ts'
import { SubmissionsService } from './requests/submissions.service.ts'
import type { Services } from './routes.ts'
import { DownloadPassesRepository } from './shares/download-passes.repository.ts'
import { LinkPasses } from './shares/link-passes.ts'
import { PublicSharesService } from './shares/public-shares.service.ts'
import { SharesRepository } from './shares/shares.repository.ts'
import { serializeShareWithFile } from './shares/shares.schemas.ts'
import { SharesService } from './shares/shares.service.ts'
import { BackupsRepository } from './storage/backups.repository.ts'
import { BackupsService } from './storage/backups.service.ts'
import { BlobDeletionsRepository } from './storage/blob-deletions.repository.ts'
import { BlobDeletionsService, type DeletionLog } from './storage/blob-deletions.service.ts'
import { StorageReconciler } from './storage/reconciler.ts'
import { StorageRepository } from './storage/storage.repository.ts'
import { type Log, UploadProcessor } from './uploads/processing.ts'
import { UploadsRepository } from './uploads/uploads.repository.ts'
import { UploadsService } from './uploads/uploads.service.ts'

/** Work that runs in the background for as long as the server does. */
export interface Jobs {
  uploadProcessor: UploadProcessor
  /** Computes the SHA-256 and CRC-32 of files whose upload came without them (an S3 multipart upload). */
  fileDigests: FileDigestsService
  /** Removes the blobs that deletions recorded and left (a crash, a failing disk). */
  blobDeletions: BlobDeletionsService
  /** Compares the blob store with the database, and repairs what is safe to (storage/reconciler.ts). */
  storageReconciler: StorageReconciler
  /** Removes expired sessions, setup links and OAuth records. */
  expiredRecords: ExpiredRecordsPurge
  /**
   * Adds full chunks of files to the name index, and writes again the blocks that deletions and renames left
   * many stale slots in (files/name-index.repository.ts).
   */
  nameIndex: NameIndexJob
  /** Sends the webhook deliveries the outbox holds, in every process (events/webhook-sender.ts). */
  webhookSender: WebhookSender
  /** Records request.closed for the file requests whose deadline passed while they were open. */
  requestDeadlines: RequestDeadlinesJob
  /** Sends the mail outbox through SMTP; undefined without SMTP_URL. */
  mailSender: MailSender | undefined
  /** Tells owners of their requests' submissions by email; undefined without SMTP_URL. */
  submissionNotices: SubmissionNoticesJob | undefined
}

export interface Wiring {
  urls: PublicUrls
  services: Services
  jobs: Jobs
  /** The OAuth authorization server, its pages drawn by `pages` (oauth/oauth.routes.ts). */
  authorizationServer(pages: ProviderPages): Promise<AuthorizationServer>
  /** Starts every background job; their faults go to `log`. */
  startJobs(log: Log & DeletionLog & SenderLog): void
  /** Stops every background job and waits for the work under way, so nothing touches storage after it. */
  stopJobs(): Promise<void>
}

export interface WiringDeps {
  config: Config
  db: Db
  blobs: BlobStore
  /**
   * Where the services count attempts (failed sign-ins, a share link's passwords): the app passes its
   * rate-limit stores (http/rate-limit.ts, in Redis with REDIS_URL); by default, this process's memory.
   */
  attempts?: AttemptCounters
  /** Where the blob store's operations and the jobs' runs are measured (http/metrics.ts), when they are. */
  metrics?: Metrics
}

/** Attempts counted in this process only: for the command-line tool and benchmarks, which take no sign-in. */
const attemptsInMemory: AttemptCounters = (policy) => new MemoryRateLimitStore(policy)

/**
 * The storage reconciler, which compares the BlobStore with the database (a job of the server and a command
 * of the command-line tool; a blob without a row may belong to an upload for as long as a grant lasts), and
 * backups (the command-line tool's).
 */
export function wireStorage(
  db: Db,
  blobs: BlobStore,
  config: Pick<Config, 'uploadGrantTtlSeconds' | 'storageCheckIntervalMs' | 'databaseUrl'>,
  exclusively: Exclusively = db.exclusively,
): { storage: StorageReconciler; backups: BackupsService } {
  return {
    storage: new StorageReconciler({
      blobs,
      storage: new StorageRepository(db),
      graceMs: Math.max(HOUR_MS, config.uploadGrantTtlSeconds * 1000),
      intervalMs: config.storageCheckIntervalMs,
      exclusively,
    }),
    backups: new BackupsService({
      engine: db.engine,
      databaseUrl: config.databaseUrl,
      backups: new BackupsRepository(db),
      blobs,
    }),
  }
}

const HOUR_MS = 60 * 60 * 1000

/**
 * Accounts, their API keys, sessions and first-run setup: what the command-line tool manages, and a part of
 * `wire`.
 */
export function wireAccounts(
  db: Db,
  attempts: AttemptCounters = attemptsInMemory,
): Pick<Services, 'accounts' | 'apiKeys' | 'sessions' | 'setup'> & {
  oauthRecords: OauthRecordsRepository
  accountsRepository: AccountsRepository
} {
  const accountsRepository = new AccountsRepository(db)
  const keys = new ApiKeysRepository(db)
  const sessions = new SessionsRepository(db)
  const oauthRecords = new OauthRecordsRepository(db)
  const accounts = new AccountsService({
    transaction: db.transaction,
    accounts: accountsRepository,
    keys,
    sessions,
    oauth: oauthRecords,
    attempts,
  })
  return {
    accounts,
    apiKeys: new ApiKeysService({ keys }),
    sessions: new SessionsService({ sessions }),
    setup: new SetupService({ links: new SetupLinksRepository(db), accountsRepository, accounts }),
    oauthRecords,
    accountsRepository,
  }
}

/**
 * Every ten minutes, the rows whose time is up: sessions, setup links, OAuth codes, tokens and grants, the byte
 * budgets of download passes, failed sign-ins older than the password page shows, webhook events and their
 * deliveries kept past EVENT_RETENTION_MS.
 */
export class ExpiredRecordsPurge {
  readonly #purges: Record<string, () => Promise<unknown>>
  readonly #exclusively: Exclusively
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> | undefined

  /** Each purge by what it removes; they run in one process at a time (Db.exclusively). */
  constructor(purges: Record<string, () => Promise<unknown>>, exclusively: Exclusively) {
    this.#purges = purges
    this.#exclusively = exclusively
  }

  start(log: Log): void {
    // One after the other: a background chore takes one of the pool's connections, never all of them (a test's
    // pool has four; a statement waiting for a connection when the pool ends would never settle).
    const run = () => {
      this.#running = this.#exclusively('expired-records', async () => {
        for (const [what, purge] of Object.entries(this.#purges)) {
          await purge().catch((error: unknown) =>
            log.error({ err: error }, `removing expired ${what} failed`),
          )
        }
      }).catch((error: unknown) => log.error({ err: error }, 'removing expired records failed'))
    }
    run()
    this.#timer = setInterval(run, 10 * 60_000)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
  }
}

export function wire({ config, db, attempts = attemptsInMemory, metrics, ...deps }: WiringDeps): Wiring {
  const urls = new PublicUrls(config.publicUrl)
  const { transaction } = db
  const blobs = metrics?.measureBlobStore(deps.blobs) ?? deps.blobs
  const exclusively = metrics?.measureJobs(db.exclusively) ?? db.exclusively

  // Repositories: each resource's SQL.
  const foldersRepository = new FoldersRepository(db)
  const filesRepository = new FilesRepository(db, { cacheSize: config.fileCacheSize })
  const sharesRepository = new SharesRepository(db)
  const requestsRepository = new RequestsRepository(db)
  const analyticsRepository = new AnalyticsRepository(db)
  const uploadsRepository = new UploadsRepository(db)
  const serverSecrets = new ServerSecrets(db)
  const downloadPasses = new DownloadPassesRepository(db)
  const keyring = new SigningKeyring(serverSecrets, config.uploadSigningSecret)
  const eventsRepository = new EventsRepository(db)
  const webhooksRepository = new WebhooksRepository(db)
  const webhookSecrets = new WebhookSecrets(serverSecrets)

  // Services: the domain rules.
  // Events carry resources in the API's shapes: the routes' serializers, as the API answers.
  const events = new EventRecorder({
    events: eventsRepository,
    shapes: {
      file: (file) => serializeFile(file, urls),
      share: (share) => serializeShareWithFile(share, urls),
      request: (request) => serializeRequestWithCount(request, urls),
      submission: serializeSubmission,
    },
  })
  const blobDeletions = new BlobDeletionsService({
    deletions: new BlobDeletionsRepository(db),
    blobs,
    exclusively,
  })
  const files = new FilesService({
    transaction,
    files: filesRepository,
    folders: foldersRepository,
    blobs,
    deletions: blobDeletions,
    events,
  })
  const blobApi = new BlobApiService({ uploads: uploadsRepository, blobs, keyring, urls })

  // Background jobs.
  const fileDigests = new FileDigestsService({ files: filesRepository, blobs, exclusively })
  const uploadProcessor = new UploadProcessor({
    soleProcessor: db.engine === 'sqlite',
    transaction,
    uploads: uploadsRepository,
    files: filesRepository,
    filesService: files,
    submissions: new SubmissionsService({
      requests: requestsRepository,
      files,
      events,
      tellOwners: config.mail !== undefined,
    }),
    blobApi,
    blobs,
    digests: fileDigests,
  })
  const storageReconciler = wireStorage(db, blobs, config, exclusively).storage
  const { oauthRecords, accountsRepository, ...accounts } = wireAccounts(db, attempts)
  const mail = new MailRepository(db)
  const passwordResets = new PasswordResetsRepository(db)
  const mailSender =
    config.mail &&
    new MailSender({
      mail,
      exclusively,
      config: { ...config.mail, publicHost: new URL(urls.origin).hostname },
    })
  const submissionNotices =
    config.mail &&
    new SubmissionNoticesJob({
      transaction,
      requests: requestsRepository,
      exclusively,
      ownerEmail: async (accountId) => (await accountsRepository.byId(accountId))?.email,
      queueMail: (trx, message) => mail.enqueue(trx, message),
      requestPage: (requestId) => `${urls.origin}/requests/${requestId}`,
    })
  const passwordReset =
    config.mail &&
    new PasswordResetService({
      transaction,
      accountsRepository,
      accounts: accounts.accounts,
      sessions: accounts.sessions,
      resets: passwordResets,
      queueMail: (trx, message) => mail.enqueue(trx, message),
      resetPage: (secret) => urls.passwordResetPage(secret),
      attempts,
    })
  const expiredRecords = new ExpiredRecordsPurge(
    {
      sessions: () => accounts.sessions.purgeExpired(),
      'setup links': () => accounts.setup.purgeExpired(),
      'failed sign-ins': () => accounts.accounts.purgeFailedSignIns(),
      'OAuth records': () => oauthRecords.deleteExpired(),
      'download passes': () => downloadPasses.deleteExpired(),
      'webhook events': () => eventsRepository.purge(Date.now() - EVENT_RETENTION_MS),
      'password reset links': () => passwordResets.deleteExpired(Date.now()),
      'emails sent': () => mail.purge(Date.now() - EVENT_RETENTION_MS),
    },
    exclusively,
  )
  const nameIndex = new NameIndexJob(db, exclusively)
  const webhookSender = new WebhookSender({
    soleSender: db.engine === 'sqlite',
    events: eventsRepository,
    webhooks: webhooksRepository,
    secrets: webhookSecrets,
    allowPrivate: config.webhooksAllowPrivate,
    transaction,
    onDisabled: config.mail
      ? async (endpoint, reason) => {
          const owner = await accountsRepository.byId(endpoint.accountId)
          if (!owner) return undefined
          const page = `${urls.origin}/account/webhooks/${endpoint.id}`
          const message = endpointDisabledMessage(owner.email, endpoint, reason, page)
          return (trx) => mail.enqueue(trx, message).then(() => {})
        }
      : undefined,
  })
  const requestDeadlines = new RequestDeadlinesJob({
    transaction,
    requests: requestsRepository,
    events,
    exclusively,
  })
  const jobs: Jobs = {
    uploadProcessor,
    fileDigests,
    blobDeletions,
    storageReconciler,
    expiredRecords,
    nameIndex,
    webhookSender,
    requestDeadlines,
    mailSender,
    submissionNotices,
  }
  const uploads = new UploadsService({
    transaction,
    uploads: uploadsRepository,
    folders: foldersRepository,
    keyring,
    processor: uploadProcessor,
    config,
    urls,
  })

  const services: Services = {
    ...accounts,
    passwordReset,
    accessTokens: new AccessTokensService({ records: oauthRecords, resource: urls.apiBase }),
    mcpAccessTokens: new AccessTokensService({ records: oauthRecords, resource: urls.mcp }),
    connectedApps: new ConnectedAppsService({ records: oauthRecords, resources: [urls.apiBase, urls.mcp] }),
    folders: new FoldersService({
      transaction,
      folders: foldersRepository,
      files: filesRepository,
      requests: requestsRepository,
    }),
    files,
    zips: new FilesZipService({ files: filesRepository, folders: foldersRepository, blobs }),
    shares: new SharesService({ transaction, shares: sharesRepository, files: filesRepository, events }),
    publicShares: new PublicSharesService({
      transaction,
      shares: sharesRepository,
      events,
      blobs,
      passes: new LinkPasses(serverSecrets),
      downloadPasses,
      attempts,
    }),
    requests: new RequestsService({
      transaction,
      requests: requestsRepository,
      folders: foldersRepository,
      maxFileSize: config.maxFileSize,
      events,
    }),
    publicRequests: new PublicRequestsService({
      requests: requestsRepository,
      uploadsRepository,
      uploads,
      maxFileSize: config.maxFileSize,
    }),
    analytics: new AnalyticsService({ analytics: analyticsRepository }),
    uploads,
    blobApi,
    health: new HealthService({ pingDatabase: db.ping, blobs }),
    webhooks: new WebhooksService({
      webhooks: webhooksRepository,
      events: eventsRepository,
      secrets: webhookSecrets,
      allowPrivate: config.webhooksAllowPrivate,
    }),
  }

  return {
    urls,
    services,
    jobs,
    authorizationServer: (pages) =>
      createAuthorizationServer({
        issuer: urls.issuer,
        resources: { api: urls.apiBase, mcp: urls.mcp },
        records: oauthRecords,
        accounts: new AccountsRepository(db),
        sessions: accounts.sessions,
        sessionCookie: sessionCookieName(config.publicUrl),
        secret: (name, generate) => serverSecrets.getOrCreate(name, generate),
        pages,
        trustProxy: config.trustProxy,
      }),
    startJobs: (log) => {
      uploadProcessor.start(log)
      fileDigests.start(log)
      blobDeletions.start(log)
      storageReconciler.start(log)
      expiredRecords.start(log)
      nameIndex.start(log)
      webhookSender.start(log)
      requestDeadlines.start(log)
      mailSender?.start(log)
      submissionNotices?.start(log)
    },
    stopJobs: async () => {
      await uploadProcessor.stop()
      await fileDigests.stop()
      await blobDeletions.stop()
      await storageReconciler.stop()
      await expiredRecords.stop()
      await nameIndex.stop()
      await webhookSender.stop()
      await requestDeadlines.stop()
      await submissionNotices?.stop()
      await mailSender?.stop()
    },
  }
}
