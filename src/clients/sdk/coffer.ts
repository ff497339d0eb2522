// The SDK's client: a method for every operation of the API, typed by the server's own OpenAPI document
// (api.d.ts, openapi-typescript) and sent by openapi-fetch. Failures are thrown as one CofferError; lists are
// async iterators that follow `nextCursor`; an upload is one call (upload.ts).
import createClient, { type Client } from 'openapi-fetch'
import type { components, operations, paths } from './api.d.ts'
import { CofferError } from './errors.ts'
import { authorizedFetch, type Credentials } from './http.ts'
import { type UploadOptions, type UploadSource, uploadFile } from './upload.ts'

export type File = components['schemas']['File']
export type Folder = components['schemas']['Folder']
/** A file in the trash: the file as it was, with when it was deleted (`deletedAt`) and goes for good (`purgeAt`). */
export type TrashedFile = components['schemas']['TrashedFile']
export type Share = components['schemas']['Share']
export type ShareWithFile = components['schemas']['ShareWithFile']
/** The settings of a link that `shares.share` applies: those POST /shares and PATCH /shares/{id} both take. */
export type ShareSettings = Pick<BodyOf<'updateShare'>, 'expiresAt' | 'password' | 'maxDownloads'>
/** A folder's public link: its page lists the folder's files as they are now, each downloadable, and all as a zip. */
export type FolderShare = components['schemas']['FolderShare']
export type FileRequest = components['schemas']['FileRequest']
export type FileRequestWithCount = components['schemas']['FileRequestWithCount']
export type Submission = components['schemas']['Submission']
export type Webhook = components['schemas']['Webhook']
export type WebhookWithSecret = components['schemas']['WebhookWithSecret']
export type WebhookDelivery = components['schemas']['WebhookDelivery']
/**
 * What the account stores against its quota: files and bytes (the trash included), the trash's part, the quota
 * (null: unlimited), the largest file (null: none) and what is left (null: unlimited).
 */
export type Usage = components['schemas']['Usage']
/** An entry of the account's audit log: what happened, who did it (`actor`), from where, when, with what. */
export type AuditEntry = components['schemas']['AuditEntry']
export type Capabilities = operations['getCapabilities']['responses'][200]['content']['application/json']

/** The query parameters of an operation. */
type QueryOf<Operation extends keyof operations> = NonNullable<operations[Operation]['parameters']['query']>
/** The JSON body of an operation. */
type BodyOf<Operation extends keyof operations> =
  NonNullable<operations[Operation]['requestBody']> extends { content: { 'application/json': infer Body } }
    ? Body
    : never
/** Listing parameters without the cursor, which the iterator follows itself. */
type ListQuery<Operation extends keyof operations> = Omit<QueryOf<Operation>, 'cursor'>

/** One page of a list. */
export interface Page<Item> {
  data: Item[]
  pagination: { nextCursor: string | null }
}

export interface CofferOptions {
  /** The server's address, such as `https://files.example.com` (without `/api/v1`). */
  url: string
  /**
   * An API key (`coffer_…`), or OAuth tokens that refresh themselves; none for the operations that need none
   * (`capabilities`, `publicRequests`).
   */
  credentials?: Credentials
  /** Retries of a request answered 429 or 503, each after its `Retry-After` (default 3). */
  retries?: number
  /** The longest wait before a retry, whatever `Retry-After` asks (default 60,000 ms). */
  maxRetryDelayMs?: number
  /** The fetch to send requests with (default the global one). */
  fetch?: typeof fetch
}

export class Coffer {
  /** The server's address, without a trailing slash. */
  readonly url: string
  readonly #client: Client<paths>
  readonly #fetch: ReturnType<typeof authorizedFetch>
  /** The fetch given in the options, if any: then every request goes through it, downloads to a file too. */
  readonly #ownFetch: typeof fetch | undefined
  #capabilities: Promise<Capabilities> | undefined

  constructor(options: CofferOptions) {
    this.url = options.url.replace(/\/+$/, '')
    this.#ownFetch = options.fetch
    this.#fetch = authorizedFetch({
      url: this.url,
      credentials: options.credentials,
      retries: options.retries ?? 3,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 60_000,
      fetch: options.fetch ?? globalThis.fetch,
    })
    this.#client = createClient<paths>({ baseUrl: `${this.url}/api/v1`, fetch: this.#fetch })
  }

  /** The server's capability index (no credential needed): limits, scopes, the blob API. Read once. */
  capabilities(): Promise<Capabilities> {
    this.#capabilities ??= this.#client
      .GET('/')
      .then((result) => ok(result))
      .catch((error) => {
        this.#capabilities = undefined
        throw error
      })
    return this.#capabilities
  }

  /** The account's storage: what it stores (the trash included), its quota, its largest file, what is left. */
  usage(): Promise<Usage> {
    return this.#data(this.#client.GET('/usage'))
  }

  readonly files = {
    /** Every file (or those matching `query`, or in `folderId`), newest first, page after page. */
    list: (query: ListQuery<'listFiles'> = {}): AsyncIterable<File> =>
      items((cursor) => this.files.page({ ...query, cursor })),
    page: (query: QueryOf<'listFiles'> = {}) =>
      this.#client.GET('/files', { params: { query } }).then(ok) as Promise<Page<File>>,
    get: (fileId: string) =>
      this.#data(this.#client.GET('/files/{fileId}', { params: { path: { fileId } } })),
    /** Renames and/or moves a file (`folderId: null` moves it to the root). */
    update: (fileId: string, body: BodyOf<'updateFile'>) =>
      this.#data(this.#client.PATCH('/files/{fileId}', { params: { path: { fileId } }, body })),
    /**
     * Deletes a file: into the trash, where `trash.restore` brings it back for the capability index's
     * `trash.retentionDays`; for good when that is 0.
     */
    delete: (fileId: string) =>
      this.#data(this.#client.DELETE('/files/{fileId}', { params: { path: { fileId } } })),
    /** Deletes up to 100 files at once (into the trash, as `delete`); resolves with the ids deleted. */
    deleteMany: (fileIds: string[]) =>
      this.#data(this.#client.DELETE('/files', { body: { fileIds } })).then((data) => data.deletedIds),
    /** The first step of an upload, for those who make the transfer themselves; see `upload`. */
    prepareUploads: (body: BodyOf<'prepareUploads'>) =>
      this.#data(this.#client.POST('/files', { body })).then((data) => data.uploads),
    uploadStatus: (intentId: string) =>
      this.#data(this.#client.GET('/files/uploads/{intentId}', { params: { path: { intentId } } })),
    /**
     * Uploads a file (a path in Node, a Blob or File, bytes, or a stream with its `size`): prepares it, sends
     * the bytes to the blob storage with @vercel/blob (in parts above 5 MiB), and resolves with the new file
     * once the server has made it.
     */
    upload: (source: UploadSource, options: UploadOptions = {}): Promise<File> =>
      uploadFile(this, source, options),
    /**
     * The file's bytes, as a Response whose body streams them. `from` and `to` (inclusive) ask for a range of
     * them (206): from an offset on, to resume a download, or the first bytes only.
     */
    download: (
      fileId: string,
      options: {
        from?: number
        to?: number
        disposition?: 'attachment' | 'inline'
        signal?: AbortSignal
      } = {},
    ) => this.#bytes(`/files/${encodeURIComponent(fileId)}/download`, options),
    /**
     * Node only: writes the file's bytes to the file at `path`, as fast as the connection brings them (save.ts),
     * and resolves once all are written. With `from`, a download that stopped resumes: the bytes from that
     * offset on are appended to the file (`resumed`), unless the server sends the whole file again.
     */
    downloadTo: (
      fileId: string,
      path: string,
      options: { from?: number; signal?: AbortSignal; onProgress?: (written: number) => void } = {},
    ) => this.#downloadTo(`/files/${encodeURIComponent(fileId)}/download`, path, options),
    /** The file's preview image (WebP), as a Response. */
    preview: (fileId: string, options: { signal?: AbortSignal } = {}) =>
      this.#bytes(`/files/${encodeURIComponent(fileId)}/preview`, options),
  }

  /**
   * The account's trash: deleted files, restorable for the capability index's `trash.retentionDays` (none when
   * that is 0, deletes being final then).
   */
  readonly trash = {
    /** Every file in the trash, the most recently deleted first, page after page. */
    list: (query: ListQuery<'listTrash'> = {}): AsyncIterable<TrashedFile> =>
      items((cursor) => this.trash.page({ ...query, cursor })),
    page: (query: QueryOf<'listTrash'> = {}) =>
      this.#client.GET('/trash', { params: { query } }).then(ok) as Promise<Page<TrashedFile>>,
    /** Puts a file back (into its folder, or the root when that is gone), with its link as it was. */
    restore: (fileId: string) =>
      this.#data(this.#client.POST('/trash/{fileId}/restore', { params: { path: { fileId } } })),
    /** Deletes a file in the trash for good; resolves with its id. */
    delete: (fileId: string) =>
      this.#data(this.#client.DELETE('/trash/{fileId}', { params: { path: { fileId } } })),
    /** Deletes every file in the trash for good; resolves with how many. */
    empty: () => this.#data(this.#client.DELETE('/trash')).then((data) => data.deletedCount),
  }

  readonly folders = {
    list: (query: ListQuery<'listFolders'> = {}): AsyncIterable<Folder> =>
      items((cursor) => this.folders.page({ ...query, cursor })),
    page: (query: QueryOf<'listFolders'> = {}) =>
      this.#client.GET('/folders', { params: { query } }).then(ok) as Promise<Page<Folder>>,
    create: (name: string) => this.#data(this.#client.POST('/folders', { body: { name } })),
    get: (folderId: string) =>
      this.#data(this.#client.GET('/folders/{folderId}', { params: { path: { folderId } } })),
    rename: (folderId: string, name: string) =>
      this.#data(
        this.#client.PATCH('/folders/{folderId}', { params: { path: { folderId } }, body: { name } }),
      ),
    delete: (folderId: string) =>
      this.#data(this.#client.DELETE('/folders/{folderId}', { params: { path: { folderId } } })),
  }

  readonly shares = {
    list: (query: ListQuery<'listShares'> = {}): AsyncIterable<ShareWithFile> =>
      items((cursor) => this.shares.page({ ...query, cursor })),
    page: (query: QueryOf<'listShares'> = {}) =>
      this.#client.GET('/shares', { params: { query } }).then(ok) as Promise<Page<ShareWithFile>>,
    /** Shares a file (or makes its share active again); resolves with the share and its public URL. */
    create: (body: BodyOf<'createShare'>) => this.#data(this.#client.POST('/shares', { body })),
    get: (shareId: string) =>
      this.#data(this.#client.GET('/shares/{shareId}', { params: { path: { shareId } } })),
    update: (shareId: string, body: BodyOf<'updateShare'>) =>
      this.#data(this.#client.PATCH('/shares/{shareId}', { params: { path: { shareId } }, body })),
    /**
     * Shares a file with these settings and resolves with its link as it now is: makes the link, turns an
     * inactive one on again, or changes the settings of the one that is on, which `create` answers unchanged (as
     * POST /shares does). A setting left out stays as it is (a new link has none); null clears it. The link may
     * still not open: its `state` says why (a download limit set below the downloads so far).
     */
    share: async (fileId: string, settings: ShareSettings = {}): Promise<Share> => {
      const { share } = await this.files.get(fileId)
      if (share?.id && share.isActive && Object.keys(settings).length > 0) {
        return this.shares.update(share.id, settings)
      }
      return this.shares.create({ fileId, ...settings })
    },
  }

  /** Folder links: at most one per folder, with the same states and settings as a file's link. */
  readonly folderShares = {
    list: (query: ListQuery<'listFolderShares'> = {}): AsyncIterable<FolderShare> =>
      items((cursor) => this.folderShares.page({ ...query, cursor })),
    page: (query: QueryOf<'listFolderShares'> = {}) =>
      this.#client.GET('/folder-shares', { params: { query } }).then(ok) as Promise<Page<FolderShare>>,
    /**
     * Shares a folder (or makes its link active again, with these settings); an active link is answered
     * unchanged, as `shares.create` does. Resolves with the link and its public URL.
     */
    create: (body: BodyOf<'createFolderShare'>) => this.#data(this.#client.POST('/folder-shares', { body })),
    get: (shareId: string) =>
      this.#data(this.#client.GET('/folder-shares/{shareId}', { params: { path: { shareId } } })),
    update: (shareId: string, body: BodyOf<'updateFolderShare'>) =>
      this.#data(this.#client.PATCH('/folder-shares/{shareId}', { params: { path: { shareId } }, body })),
    /** The folder's link, whatever its state, or undefined when it has none. */
    ofFolder: async (folderId: string): Promise<FolderShare | undefined> =>
      (await this.folderShares.page({ folderId })).data[0],
    /**
     * Shares a folder with these settings and resolves with its link as it now is, as `shares.share` does for a
     * file: makes the link, turns an inactive one on again, or changes the settings of the one that is on (which
     * `create` answers unchanged). A setting left out stays as it is (a new link has none); null clears it. The
     * link may still not open: its `state` says why.
     */
    share: async (folderId: string, settings: ShareSettings = {}): Promise<FolderShare> => {
      const share = await this.folderShares.ofFolder(folderId)
      if (share?.isActive && Object.keys(settings).length > 0) {
        return this.folderShares.update(share.id, settings)
      }
      return this.folderShares.create({ folderId, ...settings })
    },
  }

  readonly requests = {
    list: (query: ListQuery<'listRequests'> = {}): AsyncIterable<FileRequestWithCount> =>
      items((cursor) => this.requests.page({ ...query, cursor })),
    page: (query: QueryOf<'listRequests'> = {}) =>
      this.#client.GET('/requests', { params: { query } }).then(ok) as Promise<Page<FileRequestWithCount>>,
    create: (body: BodyOf<'createRequest'>) => this.#data(this.#client.POST('/requests', { body })),
    get: (requestId: string) =>
      this.#data(this.#client.GET('/requests/{requestId}', { params: { path: { requestId } } })),
    update: (requestId: string, body: BodyOf<'updateRequest'>) =>
      this.#data(this.#client.PATCH('/requests/{requestId}', { params: { path: { requestId } }, body })),
    submissions: (requestId: string, query: ListQuery<'listSubmissions'> = {}): AsyncIterable<Submission> =>
      items((cursor) => this.requests.submissionsPage(requestId, { ...query, cursor })),
    submissionsPage: (requestId: string, query: QueryOf<'listSubmissions'> = {}) =>
      this.#client
        .GET('/requests/{requestId}/submissions', { params: { path: { requestId }, query } })
        .then(ok) as Promise<Page<Submission>>,
    limits: (requestId: string) =>
      this.#data(this.#client.GET('/requests/{requestId}/limits', { params: { path: { requestId } } })),
    setLimits: (requestId: string, body: BodyOf<'setRequestLimits'>) =>
      this.#data(this.#client.PUT('/requests/{requestId}/limits', { params: { path: { requestId } }, body })),
  }

  /** What a submitter's page does: the public side of a file request, by its public id. */
  readonly publicRequests = {
    get: (publicId: string) =>
      this.#data(this.#client.GET('/public/requests/{publicId}', { params: { path: { publicId } } })),
    prepareUploads: (publicId: string, body: BodyOf<'preparePublicUploads'>) =>
      this.#data(
        this.#client.POST('/public/requests/{publicId}/uploads', { params: { path: { publicId } }, body }),
      ),
    uploadStatus: (publicId: string, body: BodyOf<'getPublicUploadStatus'>) =>
      this.#data(
        this.#client.POST('/public/requests/{publicId}/uploads/status', {
          params: { path: { publicId } },
          body,
        }),
      ),
    cancelUploads: (publicId: string, body: BodyOf<'cancelPublicUploads'>) =>
      this.#data(
        this.#client.POST('/public/requests/{publicId}/uploads/cancel', {
          params: { path: { publicId } },
          body,
        }),
      ),
  }

  readonly analytics = {
    /** The account's totals, or one share's figures with `shareId`. */
    get: (query: QueryOf<'getAnalytics'> = {}) =>
      this.#data(this.#client.GET('/analytics', { params: { query } })),
    daily: (query: QueryOf<'getDailyAnalytics'> = {}) =>
      this.#data(this.#client.GET('/analytics/daily', { params: { query } })),
    topShares: (query: QueryOf<'getTopShares'> = {}) =>
      this.#data(this.#client.GET('/analytics/top-shares', { params: { query } })),
  }

  /** The account's audit log (scope `audit:read`), newest first; `kind` takes a kind or a family (`share`). */
  readonly audit = {
    list: (query: ListQuery<'listAuditEntries'> = {}): AsyncIterable<AuditEntry> =>
      items((cursor) => this.audit.page({ ...query, cursor })),
    page: (query: QueryOf<'listAuditEntries'> = {}) =>
      this.#client.GET('/audit', { params: { query } }).then(ok) as Promise<Page<AuditEntry>>,
  }

  readonly webhooks = {
    list: (query: ListQuery<'listWebhooks'> = {}): AsyncIterable<Webhook> =>
      items((cursor) => this.webhooks.page({ ...query, cursor })),
    page: (query: QueryOf<'listWebhooks'> = {}) =>
      this.#client.GET('/webhooks', { params: { query } }).then(ok) as Promise<Page<Webhook>>,
    /** Creates an endpoint; the signing secret is in this answer only. */
    create: (body: BodyOf<'createWebhook'>) => this.#data(this.#client.POST('/webhooks', { body })),
    get: (webhookId: string) =>
      this.#data(this.#client.GET('/webhooks/{webhookId}', { params: { path: { webhookId } } })),
    update: (webhookId: string, body: BodyOf<'updateWebhook'>) =>
      this.#data(this.#client.PATCH('/webhooks/{webhookId}', { params: { path: { webhookId } }, body })),
    delete: (webhookId: string) =>
      this.#data(this.#client.DELETE('/webhooks/{webhookId}', { params: { path: { webhookId } } })),
    rotateSecret: (webhookId: string) =>
      this.#data(
        this.#client.POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId } } }),
      ),
    ping: (webhookId: string) =>
      this.#data(this.#client.POST('/webhooks/{webhookId}/ping', { params: { path: { webhookId } } })),
    deliveries: (
      webhookId: string,
      query: ListQuery<'listWebhookDeliveries'> = {},
    ): AsyncIterable<WebhookDelivery> =>
      items((cursor) => this.webhooks.deliveriesPage(webhookId, { ...query, cursor })),
    deliveriesPage: (webhookId: string, query: QueryOf<'listWebhookDeliveries'> = {}) =>
      this.#client
        .GET('/webhooks/{webhookId}/deliveries', { params: { path: { webhookId }, query } })
        .then(ok) as Promise<Page<WebhookDelivery>>,
    retryDelivery: (webhookId: string, deliveryId: string) =>
      this.#data(
        this.#client.POST('/webhooks/{webhookId}/deliveries/{deliveryId}/retry', {
          params: { path: { webhookId, deliveryId } },
        }),
      ),
  }

  /** The `data` of a success (undefined for 204 No Content). */
  async #data<Data>(
    call: Promise<{ data?: { data: Data }; error?: unknown; response: Response }>,
  ): Promise<Data> {
    return (await ok(await call))?.data as Data
  }

  async #bytes(
    path: string,
    options: { from?: number; to?: number; disposition?: string; signal?: AbortSignal },
  ): Promise<Response> {
    const url = new URL(`${this.url}/api/v1${path}`)
    if (options.disposition) url.searchParams.set('disposition', options.disposition)
    const headers = new Headers()
    if (options.from || options.to !== undefined)
      headers.set('range', `bytes=${options.from ?? 0}-${options.to ?? ''}`)
    const response = await this.#fetch(new Request(url, { headers, signal: options.signal ?? null }))
    if (!response.ok) throw await CofferError.fromResponse(response)
    return response
  }

  async #downloadTo(
    path: string,
    target: string,
    options: { from?: number; signal?: AbortSignal; onProgress?: (written: number) => void },
  ): Promise<{ bytes: number; resumed: boolean }> {
    const { fetchToFile } = await import('./save.ts')
    const from = options.from ?? 0
    const headers = new Headers(from > 0 ? { range: `bytes=${from}-` } : {})
    const request = new Request(`${this.url}/api/v1${path}`, { headers, signal: options.signal ?? null })
    let bytes = 0
    const toFile = fetchToFile(
      {
        path: target,
        append: from > 0,
        onProgress: (written) => {
          bytes = written
          options.onProgress?.(written)
        },
      },
      { fallback: this.#ownFetch ?? globalThis.fetch, overSocket: this.#ownFetch === undefined },
    )
    const response = await this.#fetch(request, toFile)
    if (!response.ok) throw await CofferError.fromResponse(response)
    return { bytes, resumed: response.status === 206 }
  }
}

/** The body of a success (undefined for 204 No Content), or the CofferError of a failure. */
async function ok<Data>(result: { data?: Data; error?: unknown; response: Response }): Promise<Data> {
  if (!result.response.ok) throw await CofferError.fromResponse(result.response, result.error)
  return result.data as Data
}

/** Every item of a list, page after page, as long as the caller asks for more. */
async function* items<Item>(page: (cursor: string | undefined) => Promise<Page<Item>>): AsyncGenerator<Item> {
  let cursor: string | undefined
  do {
    const { data, pagination } = await page(cursor)
    yield* data
    cursor = pagination.nextCursor ?? undefined
  } while (cursor !== undefined)
}
