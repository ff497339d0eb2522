// The coffer command's commands, options and help (commander). Each action connects with the saved
// credentials (profiles.ts) and calls the SDK; what they print and how they end is output.ts's.
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import packageJson from '../../../package.json' with { type: 'json' }
import { actorWords, detailWords } from '../../platform/audit/audit-words.shared.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { DEFAULT_FILE_ORDER, FILE_ORDERS, type FileOrder } from '../../resources/files/file-orders.shared.ts'
import { CofferError } from '../sdk/errors.ts'
import type {
  AuditEntry,
  Coffer,
  File,
  Folder,
  FolderShare,
  Share,
  ShareSettings,
  TrashedFile,
  Usage,
} from '../sdk/index.ts'
import { ON_CONFLICT, type OnConflict } from './name-claims.ts'
import { EXIT, NotSignedIn, type Output, output, printList, table, UsageError } from './output.ts'
import { configDirectory, connection, DEFAULT_PROFILE, Profiles, serverUrl } from './profiles.ts'

/** What every action gets: its output, the profiles, a way to connect, and the signal Ctrl-C aborts. */
export interface Run {
  out: Output
  profiles: Profiles
  connect(): Promise<Coffer>
  signal: AbortSignal
  /** The exit code, when not 0. */
  exitCode: number
}

const positiveInteger = (value: string) => {
  const number = Number(value)
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('Not a positive whole number.')
  return number
}

/** `7d`, `12h`, `30m`, an ISO date, or `never`: the expiry as an ISO date, or null. */
export function expiryOf(value: string, now = Date.now()): string | null {
  if (value === 'never') return null
  const relative = /^(\d+)([mhdw])$/.exec(value)
  if (relative) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[
      relative[2] as 'm' | 'h' | 'd' | 'w'
    ]
    return new Date(now + Number(relative[1]) * unit).toISOString()
  }
  const date = Date.parse(value)
  if (Number.isNaN(date)) {
    throw new InvalidArgumentError('Give a duration (30m, 12h, 7d, 2w), a date (2026-12-31) or "never".')
  }
  return new Date(date).toISOString()
}

/** What `coffer share` was given; commander sets `expiry` and `limit` false for --no-expiry and --no-limit. */
interface ShareOptions {
  expires?: string | null
  expiry: boolean
  /** true: ask for one; false: --no-password; undefined: keep the link's. */
  password?: boolean
  maxDownloads?: number
  limit: boolean
}

/** The settings the options ask for, but a password to ask for; a contradiction is a usage error. */
function shareSettingsOf(options: ShareOptions): ShareSettings {
  if (options.expires !== undefined && !options.expiry) {
    throw new UsageError('Give --expires or --no-expiry, not both.')
  }
  if (options.maxDownloads !== undefined && !options.limit) {
    throw new UsageError('Give --max-downloads or --no-limit, not both.')
  }
  const settings: ShareSettings = {}
  if (options.expires !== undefined) settings.expiresAt = options.expires
  else if (!options.expiry) settings.expiresAt = null
  if (options.password === false) settings.password = null
  if (options.maxDownloads !== undefined) settings.maxDownloads = options.maxDownloads
  else if (!options.limit) settings.maxDownloads = null
  return settings
}

/** What to do about a link that does not open, in the command's own options. */
const SHARE_STATE_HINTS: Record<Share['state'], string> = {
  active: '',
  disabled: 'Run the command again to turn it on.',
  expired: 'Give a later --expires, or --no-expiry.',
  exhausted: 'Its downloads reached the limit: give a higher --max-downloads, or --no-limit.',
}

const looksLikeId = (value: string, prefix: string) => new RegExp(`^${prefix}_[0-9A-Za-z]{10,}$`).test(value)

/**
 * A folder by its id or its name, compared as the server compares folder names: ignoring case ("scans" is the
 * folder "Scans", which a new "scans" would clash with). More than one match is a usage error. With `create`, a
 * name that matches none is made; `created` says so.
 */
async function folderOf(
  coffer: Coffer,
  value: string,
  options: { create?: boolean } = {},
): Promise<Folder & { created?: boolean }> {
  if (looksLikeId(value, 'fld')) return coffer.folders.get(value)
  const named: Folder[] = []
  const wanted = value.toLowerCase()
  for await (const folder of coffer.folders.list({ limit: 100 }))
    if (folder.name.toLowerCase() === wanted) named.push(folder)
  if (named.length === 1) return named[0] as Folder
  if (named.length > 1) {
    throw new UsageError(
      `${named.length} folders are named "${value}".`,
      `Give the id of one: ${named.map((f) => f.id).join(', ')}.`,
    )
  }
  if (options.create) return { ...(await coffer.folders.create(value)), created: true }
  throw new CofferError(
    404,
    'not_found',
    `No folder is named "${value}".`,
    'See your folders with `coffer folders`.',
  )
}

/** Deletes the folder if it holds no file (another client may have put one in since it was made). */
async function removeIfEmpty(coffer: Coffer, folderId: string): Promise<void> {
  const folder = await coffer.folders.get(folderId)
  if (folder.fileCount === 0) await coffer.folders.delete(folderId)
}

/** A file by its id or its exact name (the newest of that name is not guessed: more than one is a usage error). */
async function fileOf(coffer: Coffer, value: string): Promise<File> {
  if (looksLikeId(value, 'fil')) return coffer.files.get(value)
  const named: File[] = []
  for await (const file of coffer.files.list({ query: value, limit: 100 })) {
    if (file.name === value) named.push(file)
    if (named.length > 5) break
  }
  if (named.length === 1) return named[0] as File
  if (named.length > 1) {
    throw new UsageError(
      `More than one file is named "${value}".`,
      `Give the id of one: ${named.map((f) => f.id).join(', ')}.`,
    )
  }
  throw new CofferError(
    404,
    'not_found',
    `No file is named "${value}".`,
    'See your files with `coffer ls`, or give the file’s id.',
  )
}

const date = (iso: string) => iso.replace('T', ' ').slice(0, 16)

/** `1 file`, `2 files`. */
const fileCount = (n: number) => `${n} file${n === 1 ? '' : 's'}`

/**
 * The files of the trash that `values` name, each by its id or its exact name, in the order given, from one
 * reading of the trash. A name given to more than one file there is a usage error that lists them.
 */
async function trashedFilesOf(coffer: Coffer, values: string[]): Promise<TrashedFile[]> {
  const trash = await all(coffer.trash.list({ limit: 100 }))
  return values.map((value) => {
    const named = trash.filter((file) =>
      looksLikeId(value, 'fil') ? file.id === value : file.name === value,
    )
    if (named.length === 1) return named[0] as TrashedFile
    if (named.length > 1) {
      throw new UsageError(
        `${named.length} files in the trash are named "${value}".`,
        `Give the id of one: ${named.map((f) => `${f.id} (deleted ${date(f.deletedAt)})`).join(', ')}.`,
      )
    }
    throw new CofferError(
      404,
      'not_found',
      looksLikeId(value, 'fil')
        ? `The trash holds no file ${value}.`
        : `No file in the trash is named "${value}".`,
      'See what the trash holds with `coffer trash ls`.',
    )
  })
}

/** A name as the shell takes it back: quoted when it holds anything but the plainest characters. */
const shellWord = (value: string) =>
  /^[\w.,@%+=:/-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`

/** The account's storage, for people: what it stores against its quota, the trash's part, its largest file. */
export function usageLines(usage: Usage): string[] {
  const { bytes, quotaBytes, files, trashFiles, trashBytes, maxFileBytes, available } = usage
  const percent = quotaBytes === 0 ? 100 : Math.min(100, Math.floor((bytes / (quotaBytes ?? 1)) * 100))
  const lines = [
    quotaBytes === null
      ? `Storage: ${formatSize(bytes)} used, no quota`
      : `Storage: ${formatSize(bytes)} of ${formatSize(quotaBytes)} used (${percent}%), ${formatSize(available ?? 0)} left`,
    `Files: ${files}${trashFiles > 0 ? `, ${trashFiles} of them in the trash (${formatSize(trashBytes)})` : ''}`,
  ]
  if (maxFileBytes !== null) lines.push(`Largest file: ${formatSize(maxFileBytes)}`)
  return lines
}

/** Every item of a list, page after page. */
async function all<Item>(items: AsyncIterable<Item>): Promise<Item[]> {
  const collected: Item[] = []
  for await (const item of items) collected.push(item)
  return collected
}

export function buildProgram(run: Run): Command {
  const program = new Command('coffer')
    .description('Your files on a Coffer server, from the terminal.')
    .version(packageJson.version, '-V, --version')
    .option('--json', 'print one JSON value on stdout (the result, or the error), for scripts')
    .option('-s, --server <name>', 'the saved server to use (see `coffer login --name`)')
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ sortSubcommands: false })
    .addHelpText(
      'after',
      `
Examples:
  coffer login https://files.example.com     sign in (a code to enter in your browser)
  coffer upload ~/Scans --folder Taxes       upload a directory, with progress
  coffer ls --query invoice                  find files by name
  coffer share report.pdf --expires 7d       share a file, print its link
  coffer download report.pdf -o copy.pdf     download (resumes if cut short)
  coffer trash restore report.pdf            bring back a file deleted by mistake

Credentials are kept in $XDG_CONFIG_HOME/coffer/credentials.json (mode 600). For scripts and CI, set
COFFER_URL and COFFER_TOKEN (an API key) instead.
Exit codes: 0 done, 1 failed, 2 usage, 3 not signed in or not allowed, 130 cancelled.`,
    )
  for (const add of [
    signInCommands,
    transferCommands,
    fileCommands,
    deleteCommand,
    moveCommand,
    trashCommands,
    shareCommands,
    requestCommands,
    otherCommands,
    activityCommand,
  ]) {
    add(program, run)
  }
  return program
}

/** The options every command takes (--json, --server), as commander read them. */
const globalsOf = (program: Command) => program.opts<{ json?: boolean; server?: string }>()

/** login, logout: the credentials of a server. */
function signInCommands(program: Command, run: Run): void {
  const { out } = run
  program
    .command('login')
    .description('sign in to a Coffer server')
    .argument('[url]', 'the server’s address (default: COFFER_URL)')
    .option(
      '-n, --name <name>',
      'save it under this name, to switch between servers with --server',
      DEFAULT_PROFILE,
    )
    .option('--with-key', 'read an API key from stdin instead of signing in through the browser')
    .option('--no-browser', 'do not open a browser; just print the address and the code')
    .addHelpText(
      'after',
      `
Examples:
  coffer login https://files.example.com
  coffer login https://files.example.com --name work
  coffer login https://files.example.com --with-key < key.txt`,
    )
    .action(
      async (url: string | undefined, options: { name: string; withKey?: boolean; browser: boolean }) => {
        const address = url ?? process.env.COFFER_URL
        if (!address)
          throw new UsageError('Which server?', 'Give its address: coffer login https://files.example.com')
        const server = serverUrl(address)
        const { loginWithDevice, loginWithKey } = await import('./login.ts')
        if (options.withKey) {
          let key = ''
          for await (const chunk of process.stdin) key += chunk
          await loginWithKey(run.profiles, out, { url: server, name: options.name, key })
        } else {
          await loginWithDevice(run.profiles, out, {
            url: server,
            name: options.name,
            openBrowser: options.browser,
            signal: run.signal,
          })
        }
      },
    )

  program
    .command('logout')
    .description('sign out: revoke the token and forget the server')
    .action(async () => {
      const { logout } = await import('./login.ts')
      await logout(run.profiles, out, globalsOf(program).server)
    })
}

/** upload, download: bytes in and out, with progress. */
function transferCommands(program: Command, run: Run): void {
  const { out } = run
  program
    .command('upload')
    .description('upload files and directories (recursively)')
    .argument('<path...>', 'files or directories')
    .option('-f, --folder <name>', 'into this folder (its name or id; made if there is none of that name)')
    .option('--share', 'share each file and print its link')
    .addOption(
      new Option(
        '--on-conflict <what>',
        'when a file of that name is already there: keep both, skip it, or rename it',
      )
        .choices(ON_CONFLICT)
        .default('keep-both'),
    )
    .addOption(new Option('-p, --parallel <n>', 'files sent at once').default(4).argParser(positiveInteger))
    .option('--no-resume', 'start each file over, and keep nothing to resume (Ctrl-C cancels)')
    .addHelpText(
      'after',
      `
An upload stopped (Ctrl-C, a kill, a lost connection) resumes when the same command is run again: each
unfinished file (the same path, size and modification time) sends only what the server does not hold yet.

Examples:
  coffer upload report.pdf
  coffer upload ~/Scans --folder Taxes --share
  coffer upload ~/Scans --folder Taxes --on-conflict skip     send only what is not there yet
  coffer upload *.jpg --json | jq -r '.uploaded[].file.id'`,
    )
    .action(
      async (
        paths: string[],
        options: {
          folder?: string
          share?: boolean
          onConflict: OnConflict
          parallel: number
          resume: boolean
        },
      ) => {
        const coffer = await run.connect()
        const folder = options.folder ? await folderOf(coffer, options.folder, { create: true }) : undefined
        const { upload } = await import('./transfers.ts')
        let result: Awaited<ReturnType<typeof upload>> | undefined
        try {
          result = await upload(coffer, out, {
            paths,
            folderId: folder?.id ?? null,
            folderName: folder?.name ?? null,
            onConflict: options.onConflict,
            share: options.share ?? false,
            parallel: options.parallel,
            signal: run.signal,
            resume: { dir: path.join(configDirectory(), 'uploads'), fresh: !options.resume },
          })
        } finally {
          // A folder this run made and put nothing in (cancelled, every file failed) is not left behind empty;
          // unless the run was interrupted, and its uploads, which go into it, are to resume.
          const resuming = options.resume && run.signal.aborted
          if (folder?.created && (result?.uploaded.length ?? 0) === 0 && !resuming) {
            await removeIfEmpty(coffer, folder.id)
          }
        }
        out.result(result)
        if (result.failed.length > 0) run.exitCode = EXIT.failed
      },
    )

  program
    .command('download')
    .description('download a file (resumes a download cut short)')
    .argument('<file>', 'its id or exact name')
    .option('-o, --output <path>', 'where to write it; - for stdout (default: its name, here)')
    .action(async (value: string, options: { output?: string }) => {
      const coffer = await run.connect()
      const file = await fileOf(coffer, value)
      const { download } = await import('./transfers.ts')
      const result = await download(coffer, out, {
        file,
        output: options.output ?? file.name,
        signal: run.signal,
      })
      out.result({ file, ...result })
      if (result.path !== '-') {
        out.line(
          `${result.path}  ${formatSize(result.bytes)}${result.resumedFrom > 0 ? ` (resumed from ${formatSize(result.resumedFrom)})` : ''}`,
        )
      }
    })
}

/** ls, folders: the files and folders there. */
function fileCommands(program: Command, run: Run): void {
  const { out } = run
  program
    .command('ls')
    .description('list files, newest first or in another order')
    .option('-f, --folder <name>', 'in this folder (name or id)')
    .option('-q, --query <text>', 'whose names contain this text (any case; newest first)')
    .addOption(new Option('-s, --sort <order>', 'the order').choices(FILE_ORDERS).default(DEFAULT_FILE_ORDER))
    .addOption(new Option('-n, --limit <n>', 'at most this many').default(50).argParser(positiveInteger))
    .option('-a, --all', 'every one, however many')
    .action(
      async (options: { folder?: string; query?: string; sort: FileOrder; limit: number; all?: boolean }) => {
        if (options.query && options.sort !== DEFAULT_FILE_ORDER) {
          throw new UsageError('A search comes newest first.', 'Leave out --sort, or --query.')
        }
        const coffer = await run.connect()
        const folderId = options.folder ? (await folderOf(coffer, options.folder)).id : undefined
        const files: File[] = []
        const most = options.all ? Number.POSITIVE_INFINITY : options.limit
        for await (const file of coffer.files.list({
          ...(options.query ? { query: options.query } : {}),
          ...(folderId ? { folderId } : {}),
          ...(options.sort !== DEFAULT_FILE_ORDER ? { sort: options.sort } : {}),
          limit: Math.min(100, most),
        })) {
          files.push(file)
          if (files.length >= most) break
        }
        printList(out, files, 'No files.', [
          ['ID', (f) => f.id],
          ['SIZE', (f) => formatSize(f.size)],
          ['ADDED', (f) => date(f.createdAt)],
          ['LINK', (f) => f.share?.state ?? ''],
          ['NAME', (f) => f.name],
        ])
      },
    )

  program
    .command('folders')
    .description('list folders')
    .action(async () => {
      const coffer = await run.connect()
      printList(out, await all(coffer.folders.list({ limit: 100 })), 'No folders.', [
        ['ID', (f) => f.id],
        ['FILES', (f) => String(f.fileCount)],
        ['NAME', (f) => f.name],
      ])
    })
}

/** rm: files into the trash, saying for how long they can be restored (or that the delete is final). */
function deleteCommand(program: Command, run: Run): void {
  const { out } = run
  program
    .command('rm')
    .description('delete files, into the trash (see `coffer trash`)')
    .argument('<file...>', 'ids or exact names')
    .addHelpText(
      'after',
      `
A deleted file stays in the trash for as many days as the server keeps it (30 by default), then goes for
good; with a server that keeps no trash, a delete is final. See the trash with \`coffer trash ls\`.`,
    )
    .action(async (values: string[]) => {
      const coffer = await run.connect()
      const files = []
      for (const value of values) files.push(await fileOf(coffer, value))
      const [deleted, capabilities] = await Promise.all([
        coffer.files.deleteMany(files.map((f) => f.id)),
        coffer.capabilities(),
      ])
      const { retentionDays } = capabilities.trash
      out.result({ deletedIds: deleted, retentionDays })
      const gone = files.filter((f) => deleted.includes(f.id))
      if (retentionDays === 0) {
        for (const file of gone) out.line(`Deleted ${file.name} (${file.id}) for good.`)
        return
      }
      for (const file of gone) out.line(`Moved ${file.name} (${file.id}) to the trash.`)
      if (gone.length === 0) return
      const which = gone.length === 1 ? shellWord((gone[0] as File).name) : '<name or id>...'
      out.line(
        `${gone.length === 1 ? 'It' : 'They'} can be restored for ${retentionDays} day${retentionDays === 1 ? '' : 's'} with \`coffer trash restore ${which}\`.`,
      )
    })
}

/** mv: a file renamed, or moved to a folder. */
function moveCommand(program: Command, run: Run): void {
  const { out } = run
  program
    .command('mv')
    .description('rename a file, or move it to a folder')
    .argument('<file>', 'its id or exact name')
    .option('--name <name>', 'its new name')
    .option('-f, --folder <name>', 'move it into this folder (name or id)')
    .option('--root', 'move it out of its folder')
    .action(async (value: string, options: { name?: string; folder?: string; root?: boolean }) => {
      if (!options.name && !options.folder && !options.root)
        throw new UsageError('Give --name, --folder or --root.')
      if (options.folder && options.root) throw new UsageError('Give --folder or --root, not both.')
      const coffer = await run.connect()
      const file = await fileOf(coffer, value)
      const folderId = options.root
        ? null
        : options.folder
          ? (await folderOf(coffer, options.folder)).id
          : undefined
      const updated = await coffer.files.update(file.id, {
        ...(options.name ? { name: options.name } : {}),
        ...(folderId === undefined ? {} : { folderId }),
      })
      out.result(updated)
      out.line(`${updated.name}${updated.folder ? ` in ${updated.folder.name}` : ''} (${updated.id})`)
    })
}

/** trash ls, restore, rm, empty: deleted files, until they go for good. */
function trashCommands(program: Command, run: Run): void {
  const { out } = run
  const trash = program
    .command('trash')
    .description('deleted files: see them, restore them, or delete them for good')
    .addHelpText(
      'after',
      `
\`coffer rm\` moves files to the trash, where they stay for as many days as the server keeps them (30 by
default) before they go for good. A restored file goes back to its folder (the top level if that folder is
gone), with its share link as it was.

Examples:
  coffer trash ls
  coffer trash restore report.pdf
  coffer trash rm fil_06h2dnvf96dyxprpxr362cvqp4
  coffer trash empty --yes`,
    )
  trash
    .command('ls')
    .alias('list')
    .description('list the files in the trash, the most recently deleted first')
    .addOption(new Option('-n, --limit <n>', 'at most this many').default(50).argParser(positiveInteger))
    .option('-a, --all', 'every one, however many')
    .action(async (options: { limit: number; all?: boolean }) => {
      const coffer = await run.connect()
      const trashed: TrashedFile[] = []
      const most = options.all ? Number.POSITIVE_INFINITY : options.limit
      for await (const file of coffer.trash.list({ limit: Math.min(100, most) })) {
        trashed.push(file)
        if (trashed.length >= most) break
      }
      const empty =
        trashed.length === 0 && (await coffer.capabilities()).trash.retentionDays === 0
          ? 'The trash is empty: this server keeps none (a delete is final).'
          : 'The trash is empty.'
      printList(out, trashed, empty, [
        ['ID', (f) => f.id],
        ['SIZE', (f) => formatSize(f.size)],
        ['DELETED', (f) => date(f.deletedAt)],
        ['PURGE DATE', (f) => date(f.purgeAt)],
        ['NAME', (f) => f.name],
      ])
    })

  trash
    .command('restore')
    .description('put files back where they were, with their share links')
    .argument('<file...>', 'ids or exact names of files in the trash')
    .action(async (values: string[]) => {
      const coffer = await run.connect()
      const trashed = await trashedFilesOf(coffer, values)
      const restored: File[] = []
      for (const file of trashed) restored.push(await coffer.trash.restore(file.id))
      out.result({ restored })
      for (const [i, file] of restored.entries()) {
        const was = (trashed[i] as TrashedFile).folder
        out.line(
          `Restored ${file.name}${file.folder ? ` in ${file.folder.name}` : ''} (${file.id})${was && !file.folder ? `: its folder ${was.name} is gone, so it is at the top level` : ''}`,
        )
      }
    })

  trash
    .command('rm')
    .description('delete files in the trash for good')
    .argument('<file...>', 'ids or exact names of files in the trash')
    .action(async (values: string[]) => {
      const coffer = await run.connect()
      const trashed = await trashedFilesOf(coffer, values)
      const deletedIds: string[] = []
      for (const file of trashed) deletedIds.push((await coffer.trash.delete(file.id)).id)
      out.result({ deletedIds })
      for (const file of trashed) out.line(`Deleted ${file.name} (${file.id}) for good.`)
    })

  trashEmptyCommand(trash, run)
}

/** trash empty: the whole trash for good, asked first at a terminal. */
function trashEmptyCommand(trash: Command, run: Run): void {
  const { out } = run
  trash
    .command('empty')
    .description('delete every file in the trash for good (asks first)')
    .option('-y, --yes', 'do not ask (needed where there is no terminal to ask at)')
    .action(async (options: { yes?: boolean }) => {
      const coffer = await run.connect()
      if (!options.yes) {
        const first = await coffer.trash.page({ limit: 100 })
        if (first.data.length === 0) {
          out.result({ deletedCount: 0 })
          out.line('The trash is empty.')
          return
        }
        const many = first.pagination.nextCursor ? 'more than 100 files' : fileCount(first.data.length)
        const { confirm } = await import('./confirm.ts')
        const them = first.data.length === 1 && !first.pagination.nextCursor ? 'It' : 'They'
        const yes = await confirm(`Delete ${many} in the trash for good? ${them} cannot be restored.`, {
          signal: run.signal,
        })
        if (!yes) {
          out.result({ deletedCount: 0 })
          out.note('Nothing was deleted.')
          run.exitCode = EXIT.failed
          return
        }
      }
      const deletedCount = await coffer.trash.empty()
      out.result({ deletedCount })
      out.line(deletedCount === 0 ? 'The trash is empty.' : `Deleted ${fileCount(deletedCount)} for good.`)
    })
}

/** The file, or the folder with --folder, whose link `share` and `unshare` change, found once connected. */
type LinkTarget = { file: File; folder?: undefined } | { folder: Folder; file?: undefined }

/** What the command names: a file, or a folder with --folder, never both; checked before connecting. */
function linkTargetOf(value: string | undefined, folder: string | undefined) {
  if (value !== undefined && folder !== undefined) {
    throw new UsageError('Give a file or --folder, not both.')
  }
  if (folder !== undefined) {
    return async (coffer: Coffer): Promise<LinkTarget> => ({ folder: await folderOf(coffer, folder) })
  }
  if (value === undefined) throw new UsageError('Name a file, or a folder with --folder NAME.')
  return async (coffer: Coffer): Promise<LinkTarget> => ({ file: await fileOf(coffer, value) })
}

/** Prints a link made or changed: its URL, and why it does not open when it does not (exit 1). */
function printLink(run: Run, share: Share | FolderShare): void {
  run.out.result(share)
  run.out.line(share.publicUrl)
  if (share.state !== 'active') {
    run.out.note(`The link does not open: it is ${share.state}. ${SHARE_STATE_HINTS[share.state]}`)
    run.exitCode = EXIT.failed
  }
}

/** share, unshare: a file's link, or a folder's. */
function shareCommands(program: Command, run: Run): void {
  program
    .command('share')
    .description('share a file or a folder, or change its link: print the link')
    .argument('[file]', 'its id or exact name')
    .option('-f, --folder <name>', 'share this folder instead: a page of its files, and all of them as a zip')
    .addOption(
      new Option('-e, --expires <when>', 'when the link stops working: 7d, 12h, a date, never').argParser(
        (v) => expiryOf(v),
      ),
    )
    .option('--no-expiry', 'the link never expires (as --expires never)')
    .option(
      '--password',
      'ask for a password the link will require (read from stdin when it is not a terminal)',
    )
    .option('--no-password', 'the link asks for no password')
    .addOption(
      new Option('--max-downloads <n>', 'downloads allowed through the link').argParser(positiveInteger),
    )
    .option('--no-limit', 'no limit on downloads')
    .addHelpText(
      'after',
      `
A link that exists keeps the settings not given; the ones given replace its own. A folder's link opens a page
of the files in the folder as they are then (a file added later is on it), each downloadable, and all as a zip.

Examples:
  coffer share report.pdf
  coffer share report.pdf --expires 7d --max-downloads 3
  echo 'a long passphrase' | coffer share report.pdf --password
  coffer share report.pdf --no-password --no-limit
  coffer share --folder Taxes --expires 14d`,
    )
    .action(async (value: string | undefined, options: ShareOptions & { folder?: string }) => {
      const targetIn = linkTargetOf(value, options.folder)
      const settings = shareSettingsOf(options)
      const coffer = await run.connect()
      const target = await targetIn(coffer)
      if (options.password === true) settings.password = await readSecret()
      printLink(
        run,
        target.file
          ? await coffer.shares.share(target.file.id, settings)
          : await coffer.folderShares.share(target.folder.id, settings),
      )
    })
  unshareCommand(program, run)
}

/** unshare: a file's link, or a folder's, turned off. */
function unshareCommand(program: Command, run: Run): void {
  program
    .command('unshare')
    .description('turn a file’s or a folder’s link off')
    .argument('[file]', 'its id or exact name')
    .option('-f, --folder <name>', 'the link of this folder instead')
    .action(async (value: string | undefined, options: { folder?: string }) => {
      const targetIn = linkTargetOf(value, options.folder)
      const coffer = await run.connect()
      const target = await targetIn(coffer)
      const name = target.file ? target.file.name : target.folder.name
      const shareId = target.file
        ? target.file.share?.id
        : (await coffer.folderShares.ofFolder(target.folder.id))?.id
      if (!shareId) throw new UsageError(`${name} is not shared.`, 'Nothing to do.')
      const share = target.file
        ? await coffer.shares.update(shareId, { isActive: false })
        : await coffer.folderShares.update(shareId, { isActive: false })
      run.out.result(share)
      run.out.line(`${name} is no longer shared (the link ${share.publicUrl} is off).`)
    })
}

/** request create, list, submissions: links where others send files. */
function requestCommands(program: Command, run: Run): void {
  const { out } = run
  const request = program
    .command('request')
    .description('file requests: links where others upload files to you')
  request
    .command('create')
    .description('make a request and print its link')
    .requiredOption('-t, --title <title>', 'what you ask for, shown to submitters')
    .option('-d, --description <text>', 'more words for submitters')
    .option('-f, --folder <name>', 'the folder the files go to (name or id)')
    .addOption(new Option('--max-files <n>', 'files accepted in all').argParser(positiveInteger))
    .addOption(
      new Option('--deadline <when>', 'when it stops accepting: 7d, a date').argParser((v) => expiryOf(v)),
    )
    .option('--no-email', 'do not ask submitters for their email address')
    .addHelpText(
      'after',
      `
Example:
  coffer request create --title "Tax papers 2026" --folder Taxes --max-files 10 --deadline 14d`,
    )
    .action(
      async (options: {
        title: string
        description?: string
        folder?: string
        maxFiles?: number
        deadline?: string | null
        email: boolean
      }) => {
        const coffer = await run.connect()
        const folderId = options.folder ? (await folderOf(coffer, options.folder)).id : undefined
        const created = await coffer.requests.create({
          title: options.title,
          ...(options.description ? { description: options.description } : {}),
          ...(folderId ? { folderId } : {}),
          collectEmail: options.email,
          emailRequired: options.email,
        })
        if (options.maxFiles !== undefined || options.deadline) {
          await coffer.requests.setLimits(created.id, {
            ...(options.maxFiles === undefined ? {} : { maxFiles: options.maxFiles }),
            ...(options.deadline ? { deadline: options.deadline } : {}),
          })
        }
        out.result(created)
        out.line(created.publicUrl)
      },
    )
  request
    .command('list')
    .description('list your requests')
    .action(async () => {
      const coffer = await run.connect()
      printList(out, await all(coffer.requests.list({ limit: 100 })), 'No requests.', [
        ['ID', (r) => r.id],
        ['STATE', (r) => r.state],
        ['FILES', (r) => String(r.submissionCount)],
        ['TITLE', (r) => r.title],
      ])
    })
  request
    .command('submissions')
    .description('what was sent to a request')
    .argument('<id>', 'the request’s id')
    .action(async (id: string) => {
      const coffer = await run.connect()
      printList(out, await all(coffer.requests.submissions(id, { limit: 100 })), 'Nothing yet.', [
        ['FILE', (s) => s.file.id ?? ''],
        ['SIZE', (s) => formatSize(s.file.size)],
        ['SENT', (s) => date(s.createdAt)],
        ['FROM', (s) => s.submitterEmail ?? s.submitterName ?? ''],
        ['NAME', (s) => s.file.name],
      ])
    })
}

/** stats, mcp, completion. */
function otherCommands(program: Command, run: Run): void {
  const { out } = run
  program
    .command('stats')
    .description('your storage against its quota, and the views and downloads of your share links')
    .option('--share <id>', 'views and downloads of this share only (no storage)')
    .addOption(new Option('--days <n>', 'days back, with today').default(30).argParser(positiveInteger))
    .addHelpText(
      'after',
      `
Storage counts every file, those in the trash too (until they go for good), against the account's quota.`,
    )
    .action(async (options: { share?: string; days: number }) => {
      const coffer = await run.connect()
      const to = new Date().toISOString().slice(0, 10)
      const from = new Date(Date.now() - (options.days - 1) * 86_400_000).toISOString().slice(0, 10)
      const scope = options.share ? { shareId: options.share } : {}
      const [usage, totals, daily] = await Promise.all([
        options.share ? undefined : coffer.usage(),
        coffer.analytics.get(scope),
        coffer.analytics.daily({ ...scope, from, to }),
      ])
      out.result({ ...(usage ? { usage } : {}), totals, daily })
      if (usage) for (const line of usageLines(usage)) out.line(line)
      out.line(
        `Views ${totals.views}, downloads ${totals.downloads}${'activeShares' in totals ? `, active links ${totals.activeShares}` : ''}`,
      )
      const days = (daily as { days: { date: string; views: number; downloads: number }[] }).days
      // The days that had any: thirty rows of zeros say less than one line that there were none.
      const busy = days.filter((d) => d.views > 0 || d.downloads > 0)
      if (busy.length === 0) {
        out.line(`No views or downloads in the last ${options.days} day${options.days === 1 ? '' : 's'}.`)
        return
      }
      out.line(
        table(
          ['DAY', 'VIEWS', 'DOWNLOADS'],
          busy.map((d) => [d.date, String(d.views), String(d.downloads)]),
        ),
      )
    })

  program
    .command('mcp')
    .description('serve Coffer to an AI assistant (MCP over stdio), as the signed-in user')
    .addHelpText(
      'after',
      `
In a desktop assistant's MCP settings, a server whose command is:
  npx coffer mcp          (or: coffer mcp, with COFFER_URL and COFFER_TOKEN for an API key)`,
    )
    .option(
      '--poll <seconds>',
      'how often to look for files changed elsewhere, to tell the assistant its resource list changed (0: never)',
      '30',
    )
    .action(async (options: { poll: string }) => {
      const seconds = Number(options.poll)
      if (!Number.isFinite(seconds) || seconds < 0) {
        throw new UsageError(
          `--poll takes a number of seconds, not "${options.poll}".`,
          'For example: --poll 60',
        )
      }
      const coffer = await run.connect()
      const [{ cofferMcpServer, watchFileList }, { StdioServerTransport }] = await Promise.all([
        import('../mcp/tools.ts'),
        import('@modelcontextprotocol/sdk/server/stdio.js'),
      ])
      // Served until the assistant closes stdin; stdout is the protocol's alone.
      const server = cofferMcpServer(coffer, program.version() ?? '', { notifyListChanges: true })
      await server.connect(new StdioServerTransport())
      if (seconds > 0) watchFileList(server, coffer, seconds * 1000)
    })

  program
    .command('completion')
    .description('print a shell completion script')
    .argument('<shell>', 'bash or zsh')
    .addHelpText(
      'after',
      `
Install:
  coffer completion bash > ~/.local/share/bash-completion/completions/coffer
  coffer completion zsh > "\${fpath[1]}/_coffer"`,
    )
    .action(async (shell: string) => {
      const { completionScript } = await import('./completion.ts')
      process.stdout.write(completionScript(program, shell))
    })
}

/** A password typed at the terminal (not echoed), or the first line of stdin. */
async function readSecret(): Promise<string> {
  const { readPassword } = await import('../../admin-cli/password.ts')
  try {
    return await readPassword(process.stdin, process.stderr)
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function runCommand(argv: string[], signal: AbortSignal): Promise<number> {
  const json = argv.includes('--json')
  const out = output(json)
  const profiles = new Profiles()
  const run: Run = {
    out,
    profiles,
    signal,
    exitCode: EXIT.ok,
    async connect() {
      const found = await connection(profiles, program.opts<{ server?: string }>().server)
      if (!found) throw new NotSignedIn()
      const { Coffer } = await import('../sdk/index.ts')
      return new Coffer({ url: found.url, credentials: found.credentials })
    },
  }
  const program = buildProgram(run)
  program.exitOverride()
  program.configureOutput({ writeErr: (text) => process.stderr.write(text) })
  for (const command of program.commands) {
    command.exitOverride()
    for (const sub of command.commands) sub.exitOverride()
  }
  try {
    await program.parseAsync(argv, { from: 'user' })
    return run.exitCode
  } catch (error) {
    const commanderError = error as { code?: string; exitCode?: number }
    if (commanderError.code?.startsWith('commander.')) {
      // Help and the version are asked for, not errors.
      if (commanderError.code === 'commander.helpDisplayed' || commanderError.code === 'commander.version')
        return EXIT.ok
      if (commanderError.code === 'commander.help') return EXIT.ok
      return EXIT.usage
    }
    const { fail } = await import('./output.ts')
    return fail(out, error)
  }
}

/** activity: the account's audit log. */
function activityCommand(program: Command, run: Run): void {
  program
    .command('activity')
    .description(
      'who did what to your account, newest first: sign-ins, keys, links, deletions… (the audit log)',
    )
    .option(
      '--kind <kind>',
      'only this kind (key.created) or family (account, key, oauth, share, file, request…)',
    )
    .addOption(new Option('--limit <n>', 'how many entries').default(25).argParser(positiveInteger))
    .action(async (options: { kind?: string; limit: number }) => {
      const coffer = await run.connect()
      const query = { limit: Math.min(options.limit, 100), ...(options.kind ? { kind: options.kind } : {}) }
      const entries: AuditEntry[] = []
      for await (const entry of coffer.audit.list(query as Parameters<Coffer['audit']['list']>[0])) {
        entries.push(entry)
        if (entries.length === options.limit) break
      }
      printList(run.out, entries, 'Nothing yet.', [
        ['WHEN', (e) => date(e.at)],
        ['WHAT', (e) => e.kind],
        ['BY', (e) => actorWords(e.actor)],
        ['FROM', (e) => e.address ?? ''],
        ['DETAILS', (e) => detailWords(e.details)],
      ])
    })
}
