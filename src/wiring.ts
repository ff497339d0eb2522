// Builds everything the application runs on, in dependency order: repositories over the database, the
// services that hold the domain rules, and the background jobs. The one place that knows which part needs
// which; app.ts hands the services to the routes and starts and stops the jobs with the server.

import type { BlobStore } from './platform/blob/blob-store.ts'
import type { Config } from './platform/config.ts'
import type { Db, Exclusively } from './platform/db/database.ts'
import { ServerSecrets } from './platform/db/server-secrets.ts'
import type { Metrics } from './platform/http/metrics.ts'
import { MemoryRateLimitStore } from './platform/http/rate-limit-store.ts'
import { ExpiredRecordsPurge } from './platform/jobs/expired-records.job.ts'
import { type JobLog, JobRunner } from './platform/jobs/job.ts'
import { MailRepository } from './platform/mail/mail.repository.ts'
import { MailSender } from './platform/mail/mail-sender.job.ts'
import { PublicUrls } from './platform/public-urls.ts'
import { AccountsRepository } from './resources/accounts/accounts.repository.ts'
import { AccountsService, type AttemptCounters } from './resources/accounts/accounts.service.ts'
import { ApiKeysRepository } from './resources/accounts/api-keys.repository.ts'
import { ApiKeysService } from './resources/accounts/api-keys.service.ts'
import { KnownDevices } from './resources/accounts/known-devices.ts'
import { NewKeyNotes } from './resources/accounts/new-key-notes.ts'
import { PasswordResetService } from './resources/accounts/password-reset.service.ts'
import { PasswordResetsRepository } from './resources/accounts/password-resets.repository.ts'
import { SessionsRepository } from './resources/accounts/sessions.repository.ts'
import { SessionsService } from './resources/accounts/sessions.service.ts'
import { SetupService } from './resources/accounts/setup.service.ts'
import { SetupLinksRepository } from './resources/accounts/setup-links.repository.ts'
import { sessionCookieName } from './resources/accounts/web-sessions.ts'
import { AnalyticsRepository } from './resources/analytics/analytics.repository.ts'
import { AnalyticsService } from './resources/analytics/analytics.service.ts'
import { FileDigestsService } from './resources/files/file-digests.job.ts'
import { FilesRepository, type StoredFile } from './resources/files/files.repository.ts'
import { serializeFile, serializeTrashedFile } from './resources/files/files.schemas.ts'
import { type FileEvents, FilesService } from './resources/files/files.service.ts'
import { NameIndexJob } from './resources/files/search/name-index.job.ts'
import { type TrashEvents, TrashService } from './resources/files/trash.service.ts'
import { FilesZipService } from './resources/files/zip/zip.service.ts'
import { FoldersRepository } from './resources/folders/folders.repository.ts'
import { FoldersService } from './resources/folders/folders.service.ts'
import { BackupsRepository } from './resources/maintenance/backups.repository.ts'
import { BackupsService } from './resources/maintenance/backups.service.ts'
import { BlobDeletionsService } from './resources/maintenance/blob-deletions.job.ts'
import { BlobDeletionsRepository } from './resources/maintenance/blob-deletions.repository.ts'
import { StorageReconciler } from './resources/maintenance/reconciler.job.ts'
import { StorageRepository } from './resources/maintenance/storage.repository.ts'
import { AccessTokensService } from './resources/oauth/access-tokens.service.ts'
import {
  type AuthorizationServer,
  createAuthorizationServer,
  type ProviderPages,
} from './resources/oauth/authorization-server.ts'
import { ConnectedAppsService } from './resources/oauth/connected-apps.service.ts'
import { OauthRecordsRepository } from './resources/oauth/oauth-records.repository.ts'
import { PublicRequestsService } from './resources/requests/public-requests.service.ts'
import { RequestDeadlinesJob } from './resources/requests/request-deadlines.job.ts'
import { type FileRequest, RequestsRepository } from './resources/requests/requests.repository.ts'
import { serializeRequestWithCount, serializeSubmission } from './resources/requests/requests.schemas.ts'
import { type RequestEvents, RequestsService } from './resources/requests/requests.service.ts'
import { SubmissionNoticesJob } from './resources/requests/submission-notices.job.ts'
import { SubmissionsService } from './resources/requests/submissions.service.ts'
import { HealthService } from './resources/service-info/health.service.ts'
import { DownloadPassesRepository } from './resources/shares/download-passes.repository.ts'
import { type FolderShare, FolderSharesRepository } from './resources/shares/folder-shares.repository.ts'
import { serializeFolderShare } from './resources/shares/folder-shares.schemas.ts'
import { type FolderShareEvents, FolderSharesService } from './resources/shares/folder-shares.service.ts'
import { LinkPasses } from './resources/shares/link-passes.ts'
import { PublicSharesService } from './resources/shares/public-shares.service.ts'
import { SharesRepository, type ShareWithFile } from './resources/shares/shares.repository.ts'
import { serializeShareWithFile } from './resources/shares/shares.schemas.ts'
import { type ShareEvents, SharesService } from './resources/shares/shares.service.ts'
import { BlobEndpointService } from './resources/uploads/blob-endpoint/blob-endpoint.service.ts'
import { SigningKeyring } from './resources/uploads/blob-endpoint/signing-keys.ts'
import { UploadProcessor } from './resources/uploads/processing.job.ts'
import { StagedBlobs } from './resources/uploads/staged-blobs.ts'
import { UploadsRepository } from './resources/uploads/uploads.repository.ts'
import { UploadsService } from './resources/uploads/uploads.service.ts'
import { EVENT_RETENTION_MS, EventsRepository } from './resources/webhooks/events.repository.ts'
import { EventRecorder } from './resources/webhooks/events.ts'
import { endpointDisabledMessage } from './resources/webhooks/webhook-mail.ts'
import { WebhookSecrets } from './resources/webhooks/webhook-secrets.ts'
import { WebhookSender } from './resources/webhooks/webhook-sender.job.ts'
import { WebhooksRepository } from './resources/webhooks/webhooks.repository.ts'
import { WebhooksService } from './resources/webhooks/webhooks.service.ts'
import type { Services } from './routes.ts'

/** Work that runs in the background for as long as the server does. */
export interface Jobs {
  uploadProcessor: UploadProcessor
  /** Computes the SHA-256 and CRC-32 of files whose upload came without them (an S3 multipart upload). */
  fileDigests: FileDigestsService
  /** Removes the blobs that deletions recorded and left (a crash, a failing disk). */
  blobDeletions: BlobDeletionsService
  /** Compares the blob store with the database, and repairs what is safe to (storage/reconciler.job.ts). */
  storageReconciler: StorageReconciler
  /** Removes expired sessions, setup links and OAuth records. */
  expiredRecords: ExpiredRecordsPurge
  /**
   * Adds full chunks of files to the name index, and writes again the blocks that deletions and renames left
   * many stale slots in (files/search/name-index.repository.ts).
   */
  nameIndex: NameIndexJob
  /** Sends the webhook deliveries the outbox holds, in every process (webhooks/webhook-sender.job.ts). */
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
    devices: new KnownDevices(new ServerSecrets(db)),
  })
  return {
    accounts,
    apiKeys: new ApiKeysService({ keys, notes: new NewKeyNotes(new ServerSecrets(db)) }),
    sessions: new SessionsService({ sessions }),
    setup: new SetupService({ links: new SetupLinksRepository(db), accountsRepository, accounts }),
    oauthRecords,
    accountsRepository,
  }
}

export function wire({ config, db, attempts = attemptsInMemory, metrics, ...deps }: WiringDeps): Wiring {
  const platform: Platform = {
    config,
    db,
    urls: new PublicUrls(config.publicUrl),
    blobs: metrics?.measureBlobStore(deps.blobs) ?? deps.blobs,
    exclusively: metrics?.measureJobs(db.exclusively) ?? db.exclusively,
    serverSecrets: new ServerSecrets(db),
    attempts,
  }
  const { urls } = platform
  const repositories = repositoriesOf(db, config)
  const events = eventRecorder(repositories.events, urls)
  const { oauthRecords, accountsRepository, ...accounts } = wireAccounts(db, attempts)
  const content = wireContent(platform, repositories, events)
  const uploads = wireUploads(platform, repositories, content, events)
  const mail = wireMail(platform, repositories, { accountsRepository, ...accounts })
  const webhooks = wireWebhooks(platform, repositories, accountsRepository)
  const expiredRecords = new ExpiredRecordsPurge(
    {
      sessions: () => accounts.sessions.purgeExpired(),
      'setup links': () => accounts.setup.purgeExpired(),
      'failed sign-ins': () => accounts.accounts.purgeFailedSignIns(),
      'OAuth records': () => oauthRecords.deleteExpired(),
      'download passes': () => repositories.downloadPasses.deleteExpired(),
      'webhook events': () => repositories.events.purge(Date.now() - EVENT_RETENTION_MS),
      'password reset links': () => repositories.passwordResets.deleteExpired(Date.now()),
      'emails sent': () => repositories.mail.purge(Date.now() - EVENT_RETENTION_MS),
      'files in the trash': (log) => content.services.trash.purge(log),
    },
    platform.exclusively,
  )
  const jobs: Jobs = {
    ...content.jobs,
    ...uploads.jobs,
    ...mail.jobs,
    webhookSender: webhooks.sender,
    expiredRecords,
    storageReconciler: wireStorage(db, platform.blobs, config, platform.exclusively).storage,
  }
  // Each after the jobs it hands work to (JobRunner): the mail sender first, upload processing last.
  const runner = new JobRunner([
    jobs.mailSender,
    jobs.submissionNotices,
    jobs.webhookSender,
    jobs.requestDeadlines,
    jobs.nameIndex,
    jobs.storageReconciler,
    jobs.blobDeletions,
    // After the blob deletions: its purge of the trash hands them the blobs of files deleted for good.
    jobs.expiredRecords,
    jobs.fileDigests,
    jobs.uploadProcessor,
  ])

  const services: Services = {
    ...accounts,
    passwordReset: mail.passwordReset,
    accessTokens: new AccessTokensService({ records: oauthRecords, resource: urls.apiBase }),
    mcpAccessTokens: new AccessTokensService({ records: oauthRecords, resource: urls.mcp }),
    connectedApps: new ConnectedAppsService({ records: oauthRecords, resources: [urls.apiBase, urls.mcp] }),
    ...content.services,
    ...uploads.services,
    analytics: new AnalyticsService({ analytics: new AnalyticsRepository(db) }),
    health: new HealthService({ pingDatabase: db.ping, blobs: platform.blobs }),
    webhooks: webhooks.service,
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
        secret: (name, generate) => platform.serverSecrets.getOrCreate(name, generate),
        pages,
        trustProxy: config.trustProxy !== false,
      }),
    startJobs: (log) => runner.start(log),
    stopJobs: () => runner.stop(),
  }
}

/** What every part of the application is built on: the database, the blob store, the public addresses. */
interface Platform {
  config: Config
  db: Db
  urls: PublicUrls
  /** The blob store, measured when metrics are on. */
  blobs: BlobStore
  /** Runs a job's pass in one process at a time of a fleet (measured when metrics are on). */
  exclusively: Exclusively
  serverSecrets: ServerSecrets
  attempts: AttemptCounters
}

/** The repositories that more than one part of the wiring uses: each resource's SQL, built once. */
function repositoriesOf(db: Db, config: Config) {
  return {
    folders: new FoldersRepository(db),
    files: new FilesRepository(db, { cacheSize: config.fileCacheSize }),
    shares: new SharesRepository(db),
    folderShares: new FolderSharesRepository(db),
    requests: new RequestsRepository(db),
    uploads: new UploadsRepository(db),
    downloadPasses: new DownloadPassesRepository(db),
    events: new EventsRepository(db),
    webhooks: new WebhooksRepository(db),
    mail: new MailRepository(db),
    passwordResets: new PasswordResetsRepository(db),
  }
}

type Repositories = ReturnType<typeof repositoriesOf>

type AllEvents = FileEvents & TrashEvents & ShareEvents & FolderShareEvents & RequestEvents
type Events = EventRecorder<AllEvents>

/** Records the events of files, links and requests, in the API's shapes: the routes' serializers. */
function eventRecorder(events: EventsRepository, urls: PublicUrls): Events {
  const file = (stored: StoredFile) => serializeFile(stored, urls)
  const share = (link: ShareWithFile) => serializeShareWithFile(link, urls)
  const request = (fileRequest: FileRequest) => serializeRequestWithCount(fileRequest, urls)
  const folderShare = (link: FolderShare) => serializeFolderShare(link, urls)
  return new EventRecorder<AllEvents>({
    events,
    shapes: {
      'file.created': file,
      'file.trashed': (trashed) => serializeTrashedFile(trashed, urls),
      'file.restored': file,
      'file.deleted': file,
      'share.created': share,
      'share.viewed': share,
      'share.downloaded': share,
      'folder_share.created': folderShare,
      'folder_share.viewed': folderShare,
      'folder_share.downloaded': folderShare,
      'submission.received': (received) => ({
        request: request(received.request),
        submission: serializeSubmission(received.submission),
      }),
      'request.closed': (closed) => ({ request: request(closed.request), reason: closed.reason }),
    },
  })
}

/** Folders, files and what is made of them (links, requests, zips), with the jobs that keep files whole. */
function wireContent(
  { config, db, blobs, exclusively, serverSecrets, attempts }: Platform,
  r: Repositories,
  events: Events,
) {
  const { transaction } = db
  const blobDeletions = new BlobDeletionsService({
    deletions: new BlobDeletionsRepository(db),
    blobs,
    exclusively,
  })
  const trash = new TrashService({
    transaction,
    files: r.files,
    folders: r.folders,
    deletions: blobDeletions,
    events,
    linkHistory: r.shares,
    retentionDays: config.trashRetentionDays,
  })
  const files = new FilesService({ transaction, files: r.files, folders: r.folders, blobs, events, trash })
  const zips = new FilesZipService({ files: r.files, folders: r.folders, blobs })
  const services = {
    folders: new FoldersService({
      transaction,
      folders: r.folders,
      contents: [r.files, r.requests],
      linkHistory: r.shares,
    }),
    files,
    trash,
    zips,
    shares: new SharesService({ transaction, shares: r.shares, files: r.files, events }),
    folderShares: new FolderSharesService({
      transaction,
      shares: r.shares,
      folderShares: r.folderShares,
      folders: r.folders,
      events,
    }),
    publicShares: new PublicSharesService({
      transaction,
      shares: r.shares,
      folderShares: r.folderShares,
      files: r.files,
      zips,
      events,
      blobs,
      passes: new LinkPasses(serverSecrets),
      downloadPasses: r.downloadPasses,
      attempts,
    }),
    requests: new RequestsService({
      transaction,
      requests: r.requests,
      folders: r.folders,
      maxFileSize: config.maxFileSize,
      events,
    }),
  }
  const jobs = {
    blobDeletions,
    fileDigests: new FileDigestsService({ files: r.files, blobs, exclusively }),
    nameIndex: new NameIndexJob(db, exclusively),
    requestDeadlines: new RequestDeadlinesJob({ transaction, requests: r.requests, events, exclusively }),
  }
  return { services, jobs }
}

/** Uploads: preparing them, the blob endpoint their bytes go to, and the processing that makes files of them. */
function wireUploads(
  { config, db, blobs, urls, serverSecrets }: Platform,
  r: Repositories,
  content: ReturnType<typeof wireContent>,
  events: Events,
) {
  const { files } = content.services
  const keyring = new SigningKeyring(serverSecrets, config.uploadSigningSecret)
  const staged = new StagedBlobs({ uploads: r.uploads, blobs })
  const uploadProcessor = new UploadProcessor({
    soleProcessor: db.engine === 'sqlite',
    transaction: db.transaction,
    uploads: r.uploads,
    files: r.files,
    filesService: files,
    submissions: new SubmissionsService({
      requests: r.requests,
      files,
      events,
      tellOwners: config.mail !== undefined,
    }),
    staged,
    blobs,
    digests: content.jobs.fileDigests,
  })
  const uploads = new UploadsService({
    transaction: db.transaction,
    uploads: r.uploads,
    folders: r.folders,
    keyring,
    processor: uploadProcessor,
    staged,
    config,
    urls,
  })
  const services = {
    uploads,
    publicRequests: new PublicRequestsService({
      requests: r.requests,
      uploadsRepository: r.uploads,
      uploads,
      maxFileSize: config.maxFileSize,
    }),
    blobEndpoint: new BlobEndpointService({
      uploads: r.uploads,
      staged,
      intents: uploads,
      blobs,
      keyring,
      urls,
    }),
  }
  return { services, jobs: { uploadProcessor } }
}

/**
 * What sends email, and what needs it: the outbox's sender, submission notices and password resets, all
 * undefined without SMTP_URL.
 */
function wireMail(
  { config, db, exclusively, urls, attempts }: Platform,
  r: Repositories,
  accounts: Pick<ReturnType<typeof wireAccounts>, 'accounts' | 'sessions' | 'accountsRepository'>,
) {
  const { transaction } = db
  const queueMail = (
    trx: Parameters<MailRepository['enqueue']>[0],
    message: Parameters<MailRepository['enqueue']>[1],
  ) => r.mail.enqueue(trx, message)
  const mailSender =
    config.mail &&
    new MailSender({
      mail: r.mail,
      exclusively,
      config: { ...config.mail, publicHost: new URL(urls.origin).hostname },
    })
  const submissionNotices =
    config.mail &&
    new SubmissionNoticesJob({
      transaction,
      requests: r.requests,
      exclusively,
      ownerEmail: async (accountId) => (await accounts.accountsRepository.byId(accountId))?.email,
      queueMail,
      requestPage: (requestId) => `${urls.origin}/requests/${requestId}`,
    })
  const passwordReset =
    config.mail &&
    new PasswordResetService({
      transaction,
      accountsRepository: accounts.accountsRepository,
      accounts: accounts.accounts,
      sessions: accounts.sessions,
      resets: r.passwordResets,
      queueMail,
      resetPage: (secret) => urls.passwordResetPage(secret),
      attempts,
    })
  return { passwordReset, jobs: { mailSender, submissionNotices } }
}

/** Webhook endpoints and the sender of their deliveries, which emails an owner whose endpoint it disables. */
function wireWebhooks(
  { config, db, urls, serverSecrets }: Platform,
  r: Repositories,
  accounts: AccountsRepository,
) {
  const secrets = new WebhookSecrets(serverSecrets)
  const sender = new WebhookSender({
    soleSender: db.engine === 'sqlite',
    events: r.events,
    webhooks: r.webhooks,
    secrets,
    allowPrivate: config.webhooksAllowPrivate,
    transaction: db.transaction,
    onDisabled: config.mail
      ? async (endpoint, reason) => {
          const owner = await accounts.byId(endpoint.accountId)
          if (!owner) return undefined
          const page = `${urls.origin}/account/webhooks/${endpoint.id}`
          const message = endpointDisabledMessage(owner.email, endpoint, reason, page)
          return (trx) => r.mail.enqueue(trx, message).then(() => {})
        }
      : undefined,
  })
  const service = new WebhooksService({
    webhooks: r.webhooks,
    events: r.events,
    secrets,
    allowPrivate: config.webhooksAllowPrivate,
  })
  return { sender, service }
}
