// What a module is: what a resource (or a client served by the server, MCP) brings to the application, and what
// it is given to build it. Each exports one (`<resource>.module.ts`); modules.ts lists them from the bottom up,
// and wiring.ts and app.ts loop over that list. Kept apart from the composition root, so that a module depends on
// these types alone.
//
// `Repositories`, `Services`, `Jobs` and `EventPayloads` start empty here: each module declares its own entries
// beside its wiring (`declare module '../../module.ts' { interface Services { files: FilesService } }`), so that
// adding a resource touches its own folder and the list, and each entry is named where it is built.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import type { AuditLog } from './platform/audit/audit-log.ts'
import type { BlobStore } from './platform/blob/blob-store.ts'
import type { Config } from './platform/config.ts'
import type { Db, Exclusively } from './platform/db/database.ts'
import type { ServerSecrets } from './platform/db/server-secrets.ts'
import type { InProcessCredentials } from './platform/http/in-process-credentials.ts'
import type { ExpiredRecordsPurge } from './platform/jobs/expired-records.job.ts'
import type { PeriodicLog } from './platform/jobs/periodic.ts'
import type { MailRepository } from './platform/mail/mail.repository.ts'
import type { MailSender } from './platform/mail/mail-sender.job.ts'
import type { PublicUrls } from './platform/public-urls.ts'
import type { Web } from './platform/web/web.ts'
import type { AttemptCounters } from './resources/accounts/accounts.service.ts'
import type { WebSessions } from './resources/accounts/web-sessions.ts'
import type { EventLog, EventShapes } from './resources/webhooks/events.ts'

/** The repositories of every module, by name: built before any service, so any module may be handed any of them. */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each module (declaration merging), see above
export interface Repositories {}

/** The services routes call, by name: built in the modules' order. */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each module (declaration merging), see above
export interface Services {}

/**
 * Work that runs in the background for as long as the server does, by name: the platform's two here, the
 * modules' from them. Started in the modules' order, after the mail sender and before the expired records.
 */
export interface Jobs {
  /** Sends the mail outbox through SMTP; undefined without SMTP_URL. */
  mailSender: MailSender | undefined
  /** Removes the records whose time is up, by every module's purges. */
  expiredRecords: ExpiredRecordsPurge
}

/** What each event type is recorded from, by type: each module adds its own (`FileEvents`, ...). */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each module (declaration merging), see above
export interface EventPayloads {}

/** What every module is built on: the database, the blob store, the public addresses, the outboxes. */
export interface Platform {
  config: Config
  db: Db
  urls: PublicUrls
  /** The blob store, measured when metrics are on. */
  blobs: BlobStore
  /** Runs a job's pass in one process at a time of a fleet (measured when metrics are on). */
  exclusively: Exclusively
  serverSecrets: ServerSecrets
  /**
   * Where services count attempts (failed sign-ins, a share link's passwords): the app's rate-limit stores
   * (in Redis with REDIS_URL); by default, this process's memory.
   */
  attempts: AttemptCounters
  /** The email outbox, sent by the mail sender (platform/mail); nothing is sent without SMTP_URL. */
  mail: MailRepository
  /** Records the webhook events of every module, in the transaction of their change (webhooks' outbox). */
  events: EventLog<EventPayloads>
  /** Records who did what, in the transaction of the change (platform/audit). */
  audit: AuditLog
}

/** What the modules before one built: their repositories, services and jobs. */
export interface Built {
  repositories: Repositories
  services: Services
  jobs: Jobs
}

/** A purge of records whose time is up, given the log its faults that do not stop it go to. */
export type Purge = (log: PeriodicLog) => Promise<unknown>

/** What every module's routes receive. */
export interface RouteDeps {
  services: Services
  config: Config
  urls: PublicUrls
  /** What pages answer with: the layout, their security headers, error pages (platform/web/web.ts). */
  web: Web
  /** The signed-in browser: its session cookie, and the pre-handler of the pages that need one. */
  webSessions: WebSessions
  /** Credentials for calls to the API within this process, as a request's principal (the MCP server's). */
  inProcess: InProcessCredentials
}

/** The shape of every module's routes. */
export type Routes = FastifyPluginAsyncTypebox<RouteDeps>

/** The app as a module's routes receive it (with its schemas' types): what their groups of routes take. */
export type RouteApp = Parameters<Routes>[0]

/** What a module brings to the application. Every part is optional. */
export interface Module {
  /** Schemas its routes reference by name ($ref): they become components of the OpenAPI document. */
  schemas?: readonly TSchema[]
  /** Its routes of the API, served under /api/v1. */
  apiRoutes?: readonly Routes[]
  /** Its pages, and the forms and endpoints those pages use. */
  pageRoutes?: readonly Routes[]
  /** Routes served under a path of their own (the blob endpoint, which speaks another protocol). */
  mounts?: readonly { prefix: string; routes: Routes }[]
  /** Its repositories (SQL over the database), built for every module before any service. */
  repositories?(db: Db, config: Config): Partial<Repositories>
  /**
   * Its services and jobs, from the platform and what the modules before it built. A service of a module
   * further up the list is not built yet: a port it fills is handed over by that module (see `laterService`).
   */
  wire?(platform: Platform, built: Built): { services?: Partial<Services>; jobs?: Partial<Jobs> }
  /** Its records kept for a while, by what they are: the expired-records job runs these purges. */
  purges?(platform: Platform, built: Built): Record<string, Purge>
  /** How the data of its event types becomes the bodies endpoints receive: the API's shapes. */
  eventShapes?(urls: PublicUrls): Partial<EventShapes<EventPayloads>>
}

/**
 * A service of a module further up the list, for a port of a module below it (uploads' processing hands the
 * files that requests receive to requests' submissions): its calls reach it once the wiring is done. A call
 * before that is a fault of the modules' order, and throws.
 */
export function laterService<K extends keyof Services>(built: Built, name: K): Services[K] {
  return new Proxy(
    {},
    {
      get(_target, property) {
        const service = built.services[name] as Record<PropertyKey, unknown> | undefined
        if (service === undefined)
          throw new Error(`The service "${name}" is used before its module built it.`)
        const value = service[property]
        return typeof value === 'function' ? value.bind(service) : value
      },
    },
  ) as Services[K]
}
