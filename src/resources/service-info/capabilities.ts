// The capability index (GET /api/v1/): what a client needs to know before its first authenticated call.
// Built from the configuration, so it always states the limits this server actually applies.
import { type Static, Type } from 'typebox'
import packageJson from '../../../package.json' with { type: 'json' }
import { AUDIT_KINDS } from '../../platform/audit/audit-kinds.ts'
import { SCOPES } from '../../platform/auth/scopes.ts'
import { API_KEY_PREFIX } from '../../platform/auth/secrets.ts'
import { MULTIPART_THRESHOLD_BYTES } from '../../platform/blob/blob-store.ts'
import type { Config } from '../../platform/config.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import { EVENT_TYPES } from '../webhooks/event-types.ts'
import { ATTEMPT_TIMEOUT_MS, GIVE_UP_AFTER_MS } from '../webhooks/webhook-sender.job.ts'

/** The bounds the request schemas enforce, announced by the index; test/openapi.test.ts keeps them in step. */
export const LIMITS = {
  pageSize: { min: 1, max: 100, default: 25, filesDefault: 50 },
  cursorMaxLength: 128,
  searchQueryLength: { min: 1, max: 200 },
  filesPerUpload: { min: 1, max: 100 },
  fileIdsPerDelete: { min: 1, max: 100 },
  fileNameLength: { min: 1, max: 255 },
  fileTypeLength: { min: 1, max: 255 },
  folderNameLength: { min: 1, max: 80 },
  requestTitleLength: { min: 3, max: 100 },
  requestDescriptionMaxLength: 500,
  folderIdLength: { min: 1, max: 100 },
  idLength: { min: 1, max: 128 },
  grantMinLength: 32,
} as const

const Url = (description: string) => Type.String({ format: 'uri', description })
const Count = (description?: string) => Type.Integer({ minimum: 0, description })
const Range = (description: string) =>
  Type.Object({ min: Count(), max: Count() }, { additionalProperties: false, description })
const Strict = { additionalProperties: false } as const

export const CapabilityIndexSchema = Type.Object(
  {
    name: Type.String({ description: 'Always `Coffer`.' }),
    version: Type.String({ description: 'Version of the server software.' }),
    apiVersion: Type.String({ description: 'Major version of the REST API, also in its base path.' }),
    links: Type.Object(
      {
        self: Url('This index; the API base address.'),
        openapi: Url('The OpenAPI 3.1 document.'),
        docs: Url('The human-readable API reference.'),
        oauthAuthorizationServer: Type.Optional(
          Url('OAuth 2.0 authorization-server metadata (RFC 8414); present only when this server offers it.'),
        ),
      },
      Strict,
    ),
    authentication: Type.Object(
      {
        schemes: Type.Array(
          Type.Union([Type.Literal('bearer-api-key'), Type.Literal('bearer-oauth-token')]),
          {
            description: 'Credential kinds accepted, each sent as `Authorization: Bearer <credential>`.',
          },
        ),
        apiKeys: Type.Object(
          {
            header: Type.Literal('Authorization'),
            scheme: Type.Literal('Bearer'),
            prefix: Type.String({ description: 'Every API key starts with it.' }),
          },
          Strict,
        ),
        oauth: Type.Optional(
          Type.Object(
            {
              metadata: Url('Authorization-server metadata.'),
              resource: Url('The resource an access token must target: the API base address.'),
              protectedResourceMetadata: Url("The API's protected resource metadata (RFC 9728)."),
            },
            Strict,
          ),
        ),
      },
      Strict,
    ),
    setup: Type.Optional(
      Type.Object(
        {
          pending: Type.Literal(true),
          message: Type.String(),
        },
        {
          ...Strict,
          description:
            'Present while no account exists: the first one is made from the one-time link the server printed at start.',
        },
      ),
    ),
    scopes: Type.Array(Type.Object({ name: Type.String(), description: Type.String() }, Strict), {
      description: 'Every scope a credential can carry; API keys and OAuth tokens share them.',
    }),
    limits: Type.Object(
      {
        pageSize: Type.Object(
          {
            min: Count(),
            max: Count(),
            default: Count('Default `limit` of every list but `GET /files`.'),
            filesDefault: Count('Default `limit` of `GET /files`.'),
          },
          Strict,
        ),
        cursorMaxLength: Count(),
        searchQueryLength: Range('Length of the `query` search string of `GET /files`.'),
        filesPerUpload: Range('Files in one `POST /files`.'),
        fileIdsPerDelete: Range('File IDs in one `DELETE /files`.'),
        fileNameLength: Range('Length of a file name.'),
        fileTypeLength: Range('Length of a content type.'),
        fileSize: Range('Size of one file in bytes.'),
        folderNameLength: Range('Length of a folder name.'),
        requestTitleLength: Range('Length of a file request title.'),
        requestDescriptionMaxLength: Count(),
        folderIdLength: Range('Length of a `folderId`.'),
        idLength: Range('Length of every other ID in a path or body.'),
        jsonBodyBytes: Count('Largest JSON request body.'),
        rateLimit: Type.Object(
          {
            max: Count('Requests allowed per window, per credential (per client address without one).'),
            windowSeconds: Count(),
          },
          Strict,
        ),
      },
      Strict,
    ),
    uploads: Type.Object(
      {
        blobApiUrl: Url('Blob API address for the upload client (set it as `VERCEL_BLOB_API_URL`).'),
        blobApiUrlEnv: Type.String({ description: 'Environment variable the client library reads it from.' }),
        clientLibrary: Type.String({ description: 'npm package whose `upload()` speaks the blob protocol.' }),
        access: Type.Literal('private'),
        multipartThresholdBytes: Count('Use multipart transfer for files larger than this.'),
        grantTtlSeconds: Count('Lifetime of an upload grant.'),
        grantMinLength: Count('`clientPayload.grant` is at least this long.'),
      },
      Strict,
    ),
    quotas: Type.Object(
      {
        usageUrl: Url(
          'GET it (`files:read`) for the account’s usage, quota and largest file: `GET /usage`. Uploads that would pass the quota are refused with 413 `quota_exceeded` before a byte is sent.',
        ),
        defaultQuotaBytes: Type.Union([Count(), Type.Null()], {
          description:
            'The quota of every account that has none of its own (DEFAULT_QUOTA_BYTES), counting its files, the trash included; null: unlimited. An admin may set another per account.',
        }),
      },
      Strict,
    ),
    trash: Type.Object(
      {
        retentionDays: Type.Integer({
          minimum: 0,
          description:
            'How many days a deleted file stays in the trash (`GET /trash`), restorable, before it goes for good; 0: a delete is final at once.',
        }),
      },
      Strict,
    ),
    audit: Type.Object(
      {
        url: Url(
          'GET it (`audit:read`) for the account’s audit log: who did what to it, from where, when; newest first, by kind or family (`kind=share`) and time.',
        ),
        retentionDays: Type.Integer({
          minimum: 1,
          description: 'How many days an entry is kept (AUDIT_RETENTION_DAYS).',
        }),
        kinds: Type.Array(Type.Object({ name: Type.String(), description: Type.String() }, Strict), {
          description: 'What the log records, by kind.',
        }),
      },
      Strict,
    ),
    webhooks: Type.Object(
      {
        events: Type.Array(Type.Object({ name: Type.String(), description: Type.String() }, Strict), {
          description: 'The event types an endpoint may receive (`POST /webhooks`).',
        }),
        signatures: Type.Literal('standard-webhooks', {
          description:
            'Deliveries carry `webhook-id`, `webhook-timestamp` and `webhook-signature` of the Standard Webhooks scheme.',
        }),
        timeoutSeconds: Count('An attempt succeeds with a 2xx answer within this time.'),
        retryWindowSeconds: Count('Failed deliveries are tried again for this long after their event.'),
        privateTargets: Type.Boolean({
          description: 'Whether endpoints may be loopback or private addresses (WEBHOOKS_ALLOW_PRIVATE).',
        }),
      },
      Strict,
    ),
  },
  {
    ...Strict,
    description:
      'Capabilities of this server: links, authentication, scopes, limits, upload settings, quotas, the trash and webhook events.',
  },
)

export type CapabilityIndex = Static<typeof CapabilityIndexSchema>

export interface IndexOptions {
  /** Whether this server serves OAuth authorization-server metadata, i.e. accepts OAuth access tokens. */
  oauth: boolean
  /** Largest JSON request body in bytes. */
  jsonBodyBytes: number
  /** No account exists yet. */
  setupPending: boolean
}

export function capabilityIndex(config: Config, urls: PublicUrls, options: IndexOptions): CapabilityIndex {
  const { apiBase: base, oauthMetadata } = urls
  const { grantMinLength, ...bounds } = LIMITS
  return {
    name: 'Coffer',
    version: packageJson.version,
    apiVersion: 'v1',
    links: {
      self: `${base}/`,
      openapi: urls.openApi,
      docs: urls.docs,
      ...(options.oauth ? { oauthAuthorizationServer: oauthMetadata } : {}),
    },
    authentication: {
      schemes: options.oauth ? ['bearer-api-key', 'bearer-oauth-token'] : ['bearer-api-key'],
      apiKeys: { header: 'Authorization', scheme: 'Bearer', prefix: API_KEY_PREFIX },
      ...(options.oauth
        ? {
            oauth: {
              metadata: oauthMetadata,
              resource: base,
              protectedResourceMetadata: urls.protectedResourceMetadata,
            },
          }
        : {}),
    },
    ...(options.setupPending
      ? {
          setup: {
            pending: true as const,
            message:
              'No account exists yet: open the one-time setup link the server printed at start to create the first one.',
          },
        }
      : {}),
    scopes: Object.entries(SCOPES).map(([name, description]) => ({ name, description })),
    limits: {
      ...bounds,
      fileSize: { min: 1, max: config.maxFileSize },
      jsonBodyBytes: options.jsonBodyBytes,
      rateLimit: { max: config.rateLimit.max, windowSeconds: config.rateLimit.windowMs / 1000 },
    },
    uploads: {
      blobApiUrl: urls.blobApi,
      blobApiUrlEnv: 'VERCEL_BLOB_API_URL',
      clientLibrary: '@vercel/blob',
      access: 'private',
      multipartThresholdBytes: MULTIPART_THRESHOLD_BYTES,
      grantTtlSeconds: config.uploadGrantTtlSeconds,
      grantMinLength,
    },
    quotas: { usageUrl: `${base}/usage`, defaultQuotaBytes: config.defaultQuotaBytes ?? null },
    trash: { retentionDays: config.trashRetentionDays },
    audit: {
      url: `${base}/audit`,
      retentionDays: config.auditRetentionDays,
      kinds: Object.entries(AUDIT_KINDS).map(([name, kind]) => ({ name, description: kind.about })),
    },
    webhooks: {
      events: Object.entries(EVENT_TYPES).map(([name, description]) => ({ name, description })),
      signatures: 'standard-webhooks',
      timeoutSeconds: ATTEMPT_TIMEOUT_MS / 1000,
      retryWindowSeconds: GIVE_UP_AFTER_MS / 1000,
      privateTargets: config.webhooksAllowPrivate,
    },
  }
}
