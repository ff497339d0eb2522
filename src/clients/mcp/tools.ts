// Coffer for AI agents: the MCP tools and resources, on the SDK (`coffer/client`), so that they do exactly what
// the API does, with its scopes and its errors. The tools take the API's own names for their arguments
// (fileId, folderId, shareId, requestId, query, cursor, limit, name, title) and answer with a short text for
// the model and `structuredContent` in the API's shapes. `coffer mcp` serves them over stdio.
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { actorWords, detailWords } from '../../platform/audit/audit-words.shared.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { FILE_ORDERS } from '../../resources/files/file-orders.shared.ts'
import { MAX_DOWNLOADS_LIMIT, PASSWORD_LENGTH } from '../../resources/files/share-settings.shared.ts'
import { CofferError } from '../sdk/errors.ts'
import type { Coffer, File, Folder, FolderShare, Share, TrashedFile } from '../sdk/index.ts'
import { READ_LIMIT, UPLOAD_LIMIT } from './limits.ts'

const TEXT_TYPES =
  /^(text\/|application\/(json|xml|javascript|x-yaml|yaml|toml|csv|x-sh|sql|graphql)|[^;]*\+(json|xml))/

/** `1 view`, `2 views`. */
const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`

/** Who sent a submission: the name and email they gave, or what of them they gave. */
const senderOf = (s: { submitterName: string | null; submitterEmail: string | null }) =>
  s.submitterName && s.submitterEmail
    ? `${s.submitterName} <${s.submitterEmail}>`
    : (s.submitterName ?? s.submitterEmail ?? 'someone who gave no name')

const id = (what: string) => z.string().min(1).max(128).describe(`The ${what}'s id.`)
const cursor = z.string().max(128).optional().describe('`pagination.nextCursor` of the previous page.')
const limit = z.number().int().min(1).max(100).optional().describe('Items per page (1 to 100).')
const folderId = z.string().min(1).max(100).describe('A folder’s id.')

/** A tool's answer: a line or two for the model, the API's JSON as structured content. */
function answer(text: string, data: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    structuredContent: (Array.isArray(data) ? { data } : data) as Record<string, unknown>,
  }
}

const describeFile = (file: File) =>
  `${file.name} (${file.id}, ${formatSize(file.size)}, ${file.contentType}${file.folder ? `, in ${file.folder.name}` : ''}${file.share ? `, link ${file.share.state} at ${file.share.publicUrl}` : ''})`

const more = (nextCursor: string | null) => (nextCursor ? `\nMore: pass cursor "${nextCursor}".` : '')

/** A refusal the model can act on: the API's code, message and hint. */
function refusal(error: unknown): CallToolResult {
  const text =
    error instanceof CofferError
      ? `${error.code}: ${error.message}${error.hint ? ` ${error.hint}` : ''}`
      : `failed: ${(error as Error).message}`
  return { isError: true, content: [{ type: 'text', text }] }
}

/** The first `most` bytes of a file and whether that is all of it. */
async function headOf(
  coffer: Coffer,
  file: File,
  most: number,
): Promise<{ bytes: Uint8Array; whole: boolean }> {
  // Only the bytes wanted are asked for: the server sends no more, however large the file.
  const response = await coffer.files.download(file.id, file.size > most ? { to: most - 1 } : {})
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const chunks: Uint8Array[] = []
  let length = 0
  while (length < most) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    length += value.byteLength
  }
  await reader.cancel().catch(() => {})
  const bytes = new Uint8Array(Math.min(length, most))
  let offset = 0
  for (const chunk of chunks) {
    const part = chunk.subarray(0, Math.min(chunk.byteLength, bytes.byteLength - offset))
    bytes.set(part, offset)
    offset += part.byteLength
  }
  return { bytes, whole: file.size <= most }
}

const isText = (file: File) => TEXT_TYPES.test(file.contentType)

export interface McpOptions {
  /**
   * Tell the client when the list of file resources changes (notifications/resources/list_changed), at once
   * after a tool of this server changed it. Only where the transport carries messages outside a request's
   * answer: stdio, not the stateless HTTP of /mcp. For changes made elsewhere, see watchFileList.
   */
  notifyListChanges?: boolean
}

/** How many of the newest files the resource list holds. */
const LISTED_FILES = 50

export function cofferMcpServer(coffer: Coffer, version: string, options: McpOptions = {}): McpServer {
  const server = new McpServer(
    { name: 'coffer', version },
    {
      instructions:
        'Coffer holds the user’s files in flat folders, shares them by public links, and collects files from others by file requests. Find files with search_files; read a text file with read_file; share with share_file (a whole folder with share_folder). A deleted file stays in the trash for a number of days (list_trash; restore_file brings it back).',
    },
  )
  const tool = toolRegistrar(server, options)
  for (const register of [
    fileFindingTools,
    readFileTool,
    uploadFileTool,
    fileChangingTools,
    trashTools,
    folderTools,
    shareTools,
    folderShareTool,
    requestTools,
    analyticsTools,
    usageTool,
    activityTool,
  ]) {
    register(tool, coffer)
  }
  fileResource(server, coffer)
  return server
}

/**
 * How every tool is declared: its annotations from whether it only reads, a refusal of the API as the tool's
 * error, and the resource list said to have changed after a tool that changes the files.
 */
function toolRegistrar(server: McpServer, options: McpOptions) {
  return <Shape extends z.ZodRawShape>(
    name: string,
    config: {
      title: string
      description: string
      input: Shape
      readOnly: boolean
      destructive?: boolean
      /** Adds, renames or removes a file, so the newest files (the resource list) may differ. */
      changesFileList?: boolean
    },
    run: (args: z.infer<z.ZodObject<Shape>>) => Promise<CallToolResult>,
  ) =>
    server.registerTool(
      name,
      {
        title: config.title,
        description: config.description,
        inputSchema: config.input,
        annotations: {
          title: config.title,
          readOnlyHint: config.readOnly,
          destructiveHint: config.destructive ?? false,
          idempotentHint: config.readOnly,
          openWorldHint: false,
        },
      },
      (async (args: z.infer<z.ZodObject<Shape>>) => {
        try {
          const result = await run(args)
          if (config.changesFileList && options.notifyListChanges) server.sendResourceListChanged()
          return result
        } catch (error) {
          return refusal(error)
        }
      }) as never,
    )
}

type Tool = ReturnType<typeof toolRegistrar>

/** Finding files. */
function fileFindingTools(tool: Tool, coffer: Coffer): void {
  tool(
    'search_files',
    {
      title: 'Search files',
      description:
        'Files whose names contain `query` (any case), newest first; in one folder with `folderId`.',
      input: {
        query: z.string().min(1).max(200).describe('Part of the name, in any case.'),
        folderId: folderId.optional().describe('Only in this folder.'),
        cursor,
        limit,
      },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.files.page(args)
      const lines = page.data.map(describeFile)
      return answer(
        `${lines.length === 0 ? 'No file matches.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
  tool(
    'list_files',
    {
      title: 'List files',
      description: 'The files, newest first or in the order `sort` asks; in one folder with `folderId`.',
      input: {
        folderId: folderId.optional().describe('Only in this folder.'),
        sort: z
          .enum(FILE_ORDERS)
          .optional()
          .describe(
            'The order: newest (the default), oldest, name (A to Z), name-desc, largest or smallest first. Keep the same with a cursor.',
          ),
        cursor,
        limit,
      },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.files.page(args)
      return answer(
        `${page.data.length === 0 ? 'No files.' : page.data.map(describeFile).join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
  tool(
    'get_file',
    { title: 'Get a file', description: 'A file’s details.', input: { fileId: id('file') }, readOnly: true },
    async ({ fileId }) => {
      const file = await coffer.files.get(fileId)
      return answer(describeFile(file), file)
    },
  )
}

/** A text file's text, or the first part of a long one. */
function readFileTool(tool: Tool, coffer: Coffer): void {
  tool(
    'read_file',
    {
      title: 'Read a text file',
      description: `The text of a text file (UTF-8), its first ${formatSize(READ_LIMIT)} at most (\`maxBytes\` for less).`,
      input: {
        fileId: id('file'),
        maxBytes: z
          .number()
          .int()
          .min(1)
          .max(READ_LIMIT)
          .optional()
          .describe('Read at most this many bytes.'),
      },
      readOnly: true,
    },
    async ({ fileId, maxBytes }) => {
      const file = await coffer.files.get(fileId)
      if (!isText(file)) {
        return refusal(
          new CofferError(
            415,
            'not_text',
            `${file.name} is ${file.contentType}, not text.`,
            'Read it as the resource coffer://files/{id} (small files only), or share it.',
          ),
        )
      }
      const { bytes, whole } = await headOf(coffer, file, maxBytes ?? READ_LIMIT)
      const text = new TextDecoder().decode(bytes)
      return {
        content: [
          {
            type: 'text',
            text: whole
              ? text
              : `${text}\n[… the first ${formatSize(bytes.byteLength)} of ${formatSize(file.size)}]`,
          },
        ],
        structuredContent: { file, text, truncated: !whole },
      }
    },
  )
}

/** Adding a file, its content in the call: text, or base64. */
function uploadFileTool(tool: Tool, coffer: Coffer): void {
  tool(
    'upload_file',
    {
      title: 'Upload a file',
      description: `Makes a file from text, or from base64 with \`encoding: "base64"\` (at most ${formatSize(UPLOAD_LIMIT)}).`,
      input: {
        name: z.string().min(1).max(255).describe('The file’s name, with its extension.'),
        content: z.string().describe('The file’s content: text, or base64 with `encoding: "base64"`.'),
        encoding: z
          .enum(['text', 'base64'])
          .optional()
          .describe('How `content` is written; text if left out.'),
        type: z
          .string()
          .min(1)
          .max(255)
          .optional()
          .describe('The content type; by default guessed from the name.'),
        folderId: folderId.nullable().optional().describe('The folder to put it in; the root if left out.'),
      },
      readOnly: false,
      changesFileList: true,
    },
    async ({ name, content, encoding, type, folderId: folder }) => {
      // Told from its length, before any of it is decoded: base64 holds 3 bytes in 4 characters, text at least 1 in 1.
      const least = encoding === 'base64' ? Math.floor((content.length * 3) / 4) - 2 : content.length
      const bytes =
        least > UPLOAD_LIMIT
          ? undefined
          : encoding === 'base64'
            ? Buffer.from(content, 'base64')
            : Buffer.from(content, 'utf8')
      if (bytes === undefined || bytes.byteLength > UPLOAD_LIMIT) {
        return refusal(
          new CofferError(
            413,
            'too_large',
            `At most ${formatSize(UPLOAD_LIMIT)} through MCP.`,
            'Use the coffer command or the SDK for larger files.',
          ),
        )
      }
      const file = await coffer.files.upload(bytes, {
        name,
        ...(type ? { type } : {}),
        ...(folder === undefined ? {} : { folderId: folder }),
      })
      return answer(`Uploaded ${describeFile(file)}`, file)
    },
  )
}

/** Renaming, moving and deleting files. */
function fileChangingTools(tool: Tool, coffer: Coffer): void {
  tool(
    'rename_file',
    {
      title: 'Rename a file',
      description: 'Gives a file a new name.',
      input: {
        fileId: id('file'),
        name: z.string().min(1).max(255).describe('The new name, with its extension.'),
      },
      readOnly: false,
      changesFileList: true,
    },
    async ({ fileId, name }) => {
      const file = await coffer.files.update(fileId, { name })
      return answer(`Renamed: ${describeFile(file)}`, file)
    },
  )
  tool(
    'move_file',
    {
      title: 'Move a file',
      description: 'Moves a file into a folder, or to the root with `folderId: null`.',
      input: {
        fileId: id('file'),
        folderId: folderId.nullable().describe('The folder to move it into; null: the root.'),
      },
      readOnly: false,
    },
    async ({ fileId, folderId: folder }) => {
      const file = await coffer.files.update(fileId, { folderId: folder })
      return answer(`Moved: ${describeFile(file)}`, file)
    },
  )
  tool(
    'delete_file',
    {
      title: 'Delete a file',
      description:
        'Deletes a file, with its share link: into the trash, where restore_file brings it back (with its link) for the days the server keeps it; for good at once on a server that keeps no trash. The answer says which.',
      input: { fileId: id('file') },
      readOnly: false,
      changesFileList: true,
      destructive: true,
    },
    async ({ fileId }) => {
      const [deleted, capabilities] = await Promise.all([coffer.files.delete(fileId), coffer.capabilities()])
      const days = capabilities.trash.retentionDays
      return answer(
        days === 0
          ? `Deleted ${fileId} for good: this server keeps no trash, so it cannot be restored.`
          : `Moved ${fileId} to the trash: restore_file brings it back, with its share link, for ${count(days, 'day')}.`,
        deleted,
      )
    },
  )
}

const describeTrashed = (file: TrashedFile) =>
  `${describeFile(file)}, deleted ${file.deletedAt}, restorable until ${file.purgeAt}`

/** The trash: deleted files, until they go for good. */
function trashTools(tool: Tool, coffer: Coffer): void {
  tool(
    'list_trash',
    {
      title: 'List the trash',
      description:
        'The deleted files that can still be restored, the most recently deleted first, each with when it was deleted (`deletedAt`) and when it goes for good (`purgeAt`).',
      input: { cursor, limit },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.trash.page(args)
      const empty =
        page.data.length === 0 && (await coffer.capabilities()).trash.retentionDays === 0
          ? 'The trash is empty: this server keeps none (deletes are final).'
          : 'The trash is empty.'
      return answer(
        `${page.data.length === 0 ? empty : page.data.map(describeTrashed).join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
  tool(
    'restore_file',
    {
      title: 'Restore a file',
      description:
        'Brings a file back from the trash (see list_trash): into its folder (the root when that folder is gone), with its share link as it was.',
      input: { fileId: id('file') },
      readOnly: false,
      changesFileList: true,
    },
    async ({ fileId }) => {
      const file = await coffer.trash.restore(fileId)
      return answer(`Restored ${describeFile(file)}`, file)
    },
  )
}

/** Folders. */
function folderTools(tool: Tool, coffer: Coffer): void {
  tool(
    'list_folders',
    {
      title: 'List folders',
      description: 'The folders, with how many files each holds.',
      input: { cursor, limit },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.folders.page(args)
      const lines = page.data.map((f) => `${f.name} (${f.id}, ${f.fileCount} files)`)
      return answer(
        `${lines.length === 0 ? 'No folders.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
  tool(
    'create_folder',
    {
      title: 'Create a folder',
      description: 'Makes a folder (folders are flat).',
      input: {
        name: z.string().min(1).max(80).describe('The folder’s name (names are unique, ignoring case).'),
      },
      readOnly: false,
    },
    async ({ name }) => {
      const folder = await coffer.folders.create(name)
      return answer(`Created folder ${folder.name} (${folder.id}).`, folder)
    },
  )
}

/** A link's settings as the tools take them, with the API's bounds (share-settings.shared.ts). */
const shareSettings = {
  expiresAt: z
    .string()
    .datetime({ offset: true })
    .nullable()
    .optional()
    .describe('When the link stops working (ISO 8601, in the future); null: never.'),
  password: z
    .string()
    .min(PASSWORD_LENGTH.min)
    .max(PASSWORD_LENGTH.max)
    .nullable()
    .optional()
    .describe(
      `A password the link asks for before it shows anything (${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters); null: none.`,
    ),
  maxDownloads: z
    .number()
    .int()
    .min(1)
    .max(MAX_DOWNLOADS_LIMIT)
    .nullable()
    .optional()
    .describe('Downloads allowed in all; null: no limit.'),
}
/** What a link's state means for someone about to send it. */
const said = (share: Share | FolderShare) =>
  share.state === 'active'
    ? `Shared: ${share.publicUrl}`
    : `${share.publicUrl} does not open: it is ${share.state}${share.state === 'exhausted' ? ` (${share.downloadCount} downloads of ${share.maxDownloads} allowed)` : ''}.`

/** Share links. */
function shareTools(tool: Tool, coffer: Coffer): void {
  tool(
    'share_file',
    {
      title: 'Share a file',
      description:
        'Makes a file’s public link, turns it on again, or changes its settings: anyone with the link can view and download the file. Settings left out stay as they are (a new link has none).',
      input: { fileId: id('file'), ...shareSettings },
      readOnly: false,
    },
    async ({ fileId, ...settings }) => {
      const share = await coffer.shares.share(fileId, settings)
      return answer(said(share), share)
    },
  )
  tool(
    'update_share',
    {
      title: 'Update a share link',
      description:
        'Turns a link off (`isActive: false`) or on, or changes its expiry, password or download limit: a file’s link, or a folder’s (share_folder).',
      input: {
        shareId: id('share'),
        isActive: z.boolean().optional().describe('false turns the link off; true on again.'),
        ...shareSettings,
      },
      readOnly: false,
    },
    async ({ shareId, ...body }) => {
      const share = await coffer.shares.update(shareId, body).catch(async (error: unknown) => {
        // Not a file's link: a folder's, or none (then the first refusal is the answer).
        if (!(error instanceof CofferError && error.code === 'not_found')) throw error
        return coffer.folderShares.update(shareId, body).catch(() => Promise.reject(error))
      })
      return answer(`${share.publicUrl} is ${share.state}.`, share)
    },
  )
  tool(
    'list_shares',
    {
      title: 'List share links',
      description: 'The share links, with their files and counts.',
      input: { cursor, limit },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.shares.page(args)
      const lines = page.data.map(
        (s) =>
          `${s.file.name}: ${s.publicUrl} (${s.state}, ${count(s.viewCount, 'view')}, ${count(s.downloadCount, 'download')}; ${s.id})`,
      )
      return answer(
        `${lines.length === 0 ? 'No share links.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
}

/** A folder by its id, or by its name as the server compares folder names: ignoring case. */
async function folderNamed(coffer: Coffer, named: { folderId?: string; name?: string }): Promise<Folder> {
  if (named.folderId !== undefined) return coffer.folders.get(named.folderId)
  if (named.name === undefined) {
    throw new CofferError(
      400,
      'invalid_argument',
      'Give the folder’s `folderId` or its `name`.',
      'See list_folders.',
    )
  }
  const wanted = named.name.toLowerCase()
  for await (const folder of coffer.folders.list({ limit: 100 }))
    if (folder.name.toLowerCase() === wanted) return folder
  throw new CofferError(
    404,
    'not_found',
    `No folder is named "${named.name}".`,
    'See the folders with list_folders, or give a `folderId`.',
  )
}

/** A folder's link, and the folder links. */
function folderShareTool(tool: Tool, coffer: Coffer): void {
  tool(
    'share_folder',
    {
      title: 'Share a folder',
      description:
        'Makes a folder’s public link, turns it on again, or changes its settings: its page lists the files in the folder as they are when it is opened (a file added later appears, one moved out disappears), each viewable and downloadable, with Download all (one zip). Name the folder by `folderId` or `name`. Settings left out stay as they are (a new link has none); update_share changes the link by its id.',
      input: {
        folderId: folderId.optional().describe('The folder’s id (or give `name`).'),
        name: z
          .string()
          .min(1)
          .max(80)
          .optional()
          .describe('The folder’s name, in any case (or give `folderId`).'),
        ...shareSettings,
      },
      readOnly: false,
    },
    async ({ folderId: byId, name, ...settings }) => {
      const folder = await folderNamed(coffer, { folderId: byId, name })
      const share = await coffer.folderShares.share(folder.id, settings)
      const state =
        share.state === 'active'
          ? `Shared ${folder.name}: ${share.publicUrl} (active, link ${share.id}).`
          : `${said(share)} Link ${share.id}.`
      const page = `Its page lists the files in ${folder.name} as they are when it is opened (${count(folder.fileCount, 'file')} now; files added later appear too), each downloadable, with Download all as one zip`
      return answer(`${state} ${page}${share.hasPassword ? ', after asking for the password' : ''}.`, share)
    },
  )
  tool(
    'list_folder_shares',
    {
      title: 'List folder links',
      description: 'The links of folders (share_folder), with their folders and counts.',
      input: { cursor, limit },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.folderShares.page(args)
      const lines = page.data.map(
        (s) =>
          `${s.folder.name}: ${s.publicUrl} (${s.state}, ${count(s.viewCount, 'view')}, ${count(s.downloadCount, 'download')}; ${s.id})`,
      )
      return answer(
        `${lines.length === 0 ? 'No folder links.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
}

/** File requests and what was sent to them. */
function requestTools(tool: Tool, coffer: Coffer): void {
  tool(
    'create_file_request',
    {
      title: 'Create a file request',
      description: 'Makes a link where others can upload files to the user, into a folder if given.',
      input: {
        title: z.string().min(3).max(100).describe('Shown on the request’s page (3 to 100 characters).'),
        description: z
          .string()
          .max(500)
          .optional()
          .describe('Shown under the title (at most 500 characters).'),
        folderId: folderId
          .nullable()
          .optional()
          .describe('The folder that receives the files; none: the root.'),
        collectEmail: z.boolean().optional().describe('Whether the page asks senders for their email.'),
        emailRequired: z.boolean().optional().describe('Whether senders must give their email.'),
        deadline: z
          .string()
          .datetime({ offset: true })
          .optional()
          .describe('After this time (ISO 8601, in the future) the page takes no more files.'),
        maxFiles: z.number().int().min(1).optional().describe('Files accepted in all.'),
        maxFileSize: z.number().int().min(1).optional().describe('The largest file accepted, in bytes.'),
        allowedTypes: z
          .array(z.string().min(1))
          .optional()
          .describe('Extensions (".pdf") or MIME types ("image/*") accepted; none: any.'),
      },
      readOnly: false,
    },
    async ({ deadline, maxFiles, maxFileSize, allowedTypes, ...fields }) => {
      const limits = {
        ...(deadline === undefined ? {} : { deadline }),
        ...(maxFiles === undefined ? {} : { maxFiles }),
        ...(maxFileSize === undefined ? {} : { maxFileSize }),
        ...(allowedTypes === undefined ? {} : { allowedTypes }),
      }
      const request = await coffer.requests.create(fields)
      // The limits are their own resource in the API; a request is made, then limited, before its link is given.
      if (Object.keys(limits).length > 0) await coffer.requests.setLimits(request.id, limits)
      return answer(`Created "${request.title}": ${request.publicUrl}`, request)
    },
  )
  tool(
    'list_file_requests',
    {
      title: 'List file requests',
      description: 'The file requests, with how many files each received.',
      input: { folderId: folderId.optional().describe('Only in this folder.'), cursor, limit },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.requests.page(args)
      const lines = page.data.map(
        (r) => `${r.title} (${r.id}, ${r.state}, ${r.submissionCount} files): ${r.publicUrl}`,
      )
      return answer(
        `${lines.length === 0 ? 'No file requests.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
  tool(
    'list_submissions',
    {
      title: 'List submissions',
      description: 'The files sent to a file request, newest first.',
      input: { requestId: id('file request'), cursor, limit },
      readOnly: true,
    },
    async ({ requestId, ...query }) => {
      const page = await coffer.requests.submissionsPage(requestId, query)
      const lines = page.data.map(
        (s) =>
          `${s.file.name} (${formatSize(s.file.size)}) from ${senderOf(s)}, ${s.createdAt}${s.message ? `, saying: ${JSON.stringify(s.message)}` : ''}`,
      )
      return answer(
        `${lines.length === 0 ? 'Nothing received yet.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
}

/** The account's storage against its quota. */
function usageTool(tool: Tool, coffer: Coffer): void {
  tool(
    'get_usage',
    {
      title: 'Get storage usage',
      description:
        'What the account stores (files and bytes, the trash included: deleted files count until they go for good) against its quota, the largest file it may upload, and the room left. Uploads that would pass the quota are refused.',
      input: {},
      readOnly: true,
    },
    async () => {
      const usage = await coffer.usage()
      const { bytes, quotaBytes, available, files, trashFiles, trashBytes, maxFileBytes } = usage
      const stored =
        quotaBytes === null
          ? `${formatSize(bytes)} stored, no quota.`
          : `${formatSize(bytes)} stored of a quota of ${formatSize(quotaBytes)}: ${formatSize(available ?? 0)} left.`
      const trash = trashFiles > 0 ? `, ${trashFiles} of them in the trash (${formatSize(trashBytes)})` : ''
      const largest = maxFileBytes === null ? '' : ` Largest file: ${formatSize(maxFileBytes)}.`
      return answer(`${stored} ${count(files, 'file')}${trash}.${largest}`, usage)
    },
  )
}

/** The account's audit log. */
function activityTool(tool: Tool, coffer: Coffer): void {
  tool(
    'list_activity',
    {
      title: 'List account activity',
      description:
        'The account’s audit log, newest first: sign-ins (and refused ones), passwords, API keys, applications allowed, share and folder links, files deleted and restored, file requests, webhooks, and what admins did; each with who did it and from which address. `kind` narrows it to a kind (`key.created`) or a family (`account`, `key`, `oauth`, `share`, `folder_share`, `file`, `request`, `webhook`). Needs the scope audit:read.',
      input: {
        kind: z
          .string()
          .max(40)
          .optional()
          .describe('Only this kind (`share.created`) or family of kinds (`share`); every kind by default.'),
        cursor,
        limit,
      },
      readOnly: true,
    },
    async (args) => {
      const page = await coffer.audit.page(args as Parameters<Coffer['audit']['page']>[0])
      const lines = page.data.map(
        (entry) =>
          `${entry.at} ${entry.kind} by ${actorWords(entry.actor)}${entry.address ? ` from ${entry.address}` : ''}${Object.keys(entry.details).length > 0 ? ` (${detailWords(entry.details)})` : ''}`,
      )
      return answer(
        `${lines.length === 0 ? 'Nothing yet.' : lines.join('\n')}${more(page.pagination.nextCursor)}`,
        page,
      )
    },
  )
}

/** Views and downloads. */
function analyticsTools(tool: Tool, coffer: Coffer): void {
  tool(
    'get_analytics',
    {
      title: 'Get share analytics',
      description:
        'Views and downloads: the totals, or one share link’s with `shareId`; with `from` and `to`, also each day of that period (UTC) that had any.',
      input: {
        shareId: id('share').optional(),
        from: z.string().date().optional().describe('The first day of a period (YYYY-MM-DD).'),
        to: z
          .string()
          .date()
          .optional()
          .describe('The last day of the period (YYYY-MM-DD); today if left out.'),
      },
      readOnly: true,
    },
    async ({ shareId, from, to }) => {
      const scope = shareId === undefined ? {} : { shareId }
      const figures = await coffer.analytics.get(scope)
      const total = `${count(figures.views, 'view')}, ${count(figures.downloads, 'download')} in all.`
      if (from === undefined) return answer(total, figures)
      const daily = (await coffer.analytics.daily({
        ...scope,
        from,
        ...(to === undefined ? {} : { to }),
      })) as {
        days: { date: string; views: number; downloads: number }[]
      }
      const busy = daily.days.filter((day) => day.views > 0 || day.downloads > 0)
      const days = busy.map(
        (day) => `${day.date}: ${count(day.views, 'view')}, ${count(day.downloads, 'download')}`,
      )
      return answer(
        `${total}\n${days.length === 0 ? `None from ${from}${to ? ` to ${to}` : ''}.` : days.join('\n')}`,
        { ...figures, days: daily.days },
      )
    },
  )
}

/** The files as resources, by the template coffer://files/{fileId}: text as text, other bytes in base64. */
function fileResource(server: McpServer, coffer: Coffer): void {
  server.registerResource(
    'file',
    new ResourceTemplate('coffer://files/{fileId}', {
      list: async () => ({ resources: await fileResources(coffer) }),
    }),
    {
      title: 'A file',
      description: `A file’s content: text, or base64 for other files of ${formatSize(READ_LIMIT)} at most.`,
    },
    async (uri, { fileId }) => {
      const file = await coffer.files.get(String(fileId))
      if (!isText(file) && file.size > READ_LIMIT) {
        throw new Error(
          `${file.name} is ${formatSize(file.size)}: only text and files of ${formatSize(READ_LIMIT)} at most are read.`,
        )
      }
      const { bytes } = await headOf(coffer, file, READ_LIMIT)
      const content = isText(file)
        ? { uri: uri.href, mimeType: file.contentType, text: new TextDecoder().decode(bytes) }
        : { uri: uri.href, mimeType: file.contentType, blob: Buffer.from(bytes).toString('base64') }
      return { contents: [content] }
    },
  )
}

/** The resources listed: the newest files. */
async function fileResources(coffer: Coffer) {
  const page = await coffer.files.page({ limit: LISTED_FILES })
  return page.data.map((file) => ({
    uri: `coffer://files/${file.id}`,
    name: file.name,
    mimeType: file.contentType,
    size: file.size,
  }))
}

/**
 * Tells the client of `server` when the list of file resources changes by any hand (the web app, another
 * client): asks for the newest files every `intervalMs` and notifies when they differ from the last answer.
 * For stdio, where a notification can be sent at any time. Returns what stops it; a failed poll is tried again
 * at the next.
 */
export function watchFileList(server: McpServer, coffer: Coffer, intervalMs: number): () => void {
  let last: string | undefined
  const poll = async () => {
    const listed = JSON.stringify(await fileResources(coffer))
    if (last !== undefined && listed !== last) server.sendResourceListChanged()
    last = listed
  }
  let polling = poll().catch(() => {})
  const timer = setInterval(() => {
    polling = polling.then(poll).catch(() => {})
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
