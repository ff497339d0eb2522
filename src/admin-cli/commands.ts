// The commands of `npm run cli`: each declares its flags (for parsing and help) and acts through the
// services, like a route does. Each returns one JSON object and the same result as text for people.

import { ALL_SCOPES, isScope, parseScopes, SCOPES, type Scope } from '../platform/auth/scopes.ts'
import { formatSize } from '../platform/format-size.shared.ts'
import { toIso, toIsoOrNull } from '../platform/http/schemas.ts'
import type { Account } from '../resources/accounts/accounts.repository.ts'
import type { AccountsService } from '../resources/accounts/accounts.service.ts'
import type { ApiKey } from '../resources/accounts/api-keys.repository.ts'
import type { ApiKeysService } from '../resources/accounts/api-keys.service.ts'
import type { BackupManifest, BackupsService } from '../resources/maintenance/backups.service.ts'
import type { StorageReconciler, StorageReport } from '../resources/maintenance/reconciler.job.ts'
import type { QuotaChange, QuotasService, Usage } from '../resources/quotas/quotas.service.ts'

export const PROGRAM = 'npm run cli --'

/** The command line itself is wrong (exit code 2). `path` names the command whose help to show. */
export class UsageError extends Error {
  readonly path: string

  constructor(message: string, path: string) {
    super(message)
    this.name = 'UsageError'
    this.path = path
  }
}

export interface Flag {
  type: 'string' | 'boolean'
  /** Shown after a string flag in help, e.g. `<email>`. */
  placeholder?: string
  required?: boolean
  description: string
}

export type Values = Record<string, string | boolean | undefined>

export interface CliServices {
  accounts: AccountsService
  apiKeys: ApiKeysService
  storage: StorageReconciler
  backups: BackupsService
  quotas: QuotasService
}

export interface Context {
  values: Values
  /** Opens the storage, bringing its schema up to date, on first use. */
  services(): Promise<CliServices>
  readPassword(): Promise<string>
  /** Restores a backup's database into the configured, empty storage, before `services` opens it. */
  restoreDatabase(from: string): Promise<BackupManifest>
  /** `group name`, for usage errors. */
  path: string
}

export interface Result {
  json: Record<string, unknown>
  text: string
  /** 1 when the command ran but found something wrong (a storage check); 0 when left out. */
  exitCode?: number
}

export interface Command {
  group: string
  name: string
  summary: string
  description: string
  flags: Record<string, Flag>
  /** Help printed after the flags. */
  notes?: string
  run(context: Context): Promise<Result>
}

function option(context: Context, name: string): string {
  const value = context.values[name]
  if (typeof value !== 'string') throw new UsageError(`Missing option --${name}.`, context.path)
  return value
}

const accountJson = (account: Account) => ({
  id: account.id,
  email: account.email,
  role: account.role,
  createdAt: toIso(account.createdAt),
})

/** A key as listed: everything but its secret, which Coffer does not have. */
const keyJson = (key: ApiKey) => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  createdAt: toIso(key.createdAt),
  lastUsedAt: toIsoOrNull(key.lastUsedAt),
  revokedAt: toIsoOrNull(key.revokedAt),
})

/** A flag's whole number of bytes (digits only). */
function bytesOf(context: Context, flag: string, value: string): number {
  const bytes = /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(bytes)) {
    const words = flag === 'quota' ? 'a number of bytes, unlimited or default' : 'a number of bytes or none'
    throw new UsageError(`--${flag} must be ${words}, got "${value}".`, context.path)
  }
  return bytes
}

/** An account's quota and largest file, with what it stores, for people. */
function describeQuota(usage: Usage, byDefault: boolean): string {
  const quota =
    usage.quotaBytes === null
      ? 'no quota'
      : `a quota of ${formatSize(usage.quotaBytes)} (${usage.quotaBytes} bytes)`
  const largest =
    usage.maxFileBytes === null
      ? 'no largest file of its own'
      : `files of at most ${formatSize(usage.maxFileBytes)} (${usage.maxFileBytes} bytes)`
  return `${quota}${byDefault ? ', the default' : ''}, ${largest}; it stores ${formatSize(usage.bytes)} in ${usage.files} file${usage.files === 1 ? '' : 's'}, the trash included`
}

/** Left-aligned columns for people; scripts use --json. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)))
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

function scopesOf(context: Context): Scope[] {
  const list = option(context, 'scopes').trim()
  if (list === 'all') return [...ALL_SCOPES]
  const valid = `Valid scopes: ${ALL_SCOPES.join(', ')}; or "all" for every scope.`
  let scopes: Scope[]
  try {
    scopes = parseScopes(list)
  } catch {
    const unknown = list.split(/[\s,]+/).filter((name) => name && !isScope(name))
    throw new UsageError(`Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}. ${valid}`, context.path)
  }
  if (scopes.length === 0) throw new UsageError(`--scopes needs at least one scope. ${valid}`, context.path)
  return scopes
}

const EMAIL: Flag = {
  type: 'string',
  placeholder: '<email>',
  required: true,
  description: "the account's email address",
}
const PASSWORD_STDIN: Flag = {
  type: 'boolean',
  description: 'read a password from the first line of stdin (typed hidden at a terminal)',
}

const SCOPE_HELP = `Scopes:\n${ALL_SCOPES.map((scope) => `  ${scope.padEnd(16)}${SCOPES[scope]}`).join('\n')}`

export const COMMANDS: Command[] = [
  {
    group: 'accounts',
    name: 'create',
    summary: 'Create an account',
    description:
      'Create an account, a member unless --admin is given. Without a password it can still use API keys made for it.',
    flags: {
      email: EMAIL,
      'password-stdin': PASSWORD_STDIN,
      admin: { type: 'boolean', description: 'make it an admin, who manages the accounts of the server' },
    },
    async run(context) {
      const email = option(context, 'email')
      const password = context.values['password-stdin'] ? await context.readPassword() : undefined
      const { accounts } = await context.services()
      const role = context.values.admin ? 'admin' : 'member'
      const account = await accounts.create({ email, password, role }, { via: 'admin_command' })
      return {
        json: accountJson(account),
        text: `Created ${role === 'admin' ? 'the admin' : 'account'} ${account.id} for ${account.email}${password === undefined ? '' : ', with a password'}.`,
      }
    },
  },
  {
    group: 'accounts',
    name: 'set-role',
    summary: 'Make an account an admin or a member',
    description:
      'Make an account an admin (who manages the accounts of the server on its /admin pages) or a member. The last admin that is not disabled stays one.',
    flags: {
      email: EMAIL,
      role: {
        type: 'string',
        placeholder: '<admin|member>',
        required: true,
        description: 'the role it gets',
      },
    },
    async run(context) {
      const role = option(context, 'role')
      if (role !== 'admin' && role !== 'member') {
        throw new UsageError(`--role must be admin or member, got "${role}".`, context.path)
      }
      const { accounts } = await context.services()
      const account = await accounts.setRole(option(context, 'email'), role)
      return {
        json: accountJson(account),
        text: `${account.email} is ${role === 'admin' ? 'an admin' : 'a member'}.`,
      }
    },
  },
  {
    group: 'accounts',
    name: 'set-quota',
    summary: "Set an account's storage quota and largest file",
    description:
      'Set how much an account may store (its files, those in the trash included, and its uploads under way) and, optionally, the largest file it may upload. Uploads that would pass them are refused before a byte is sent; what it stores already stays.',
    flags: {
      email: EMAIL,
      quota: {
        type: 'string',
        placeholder: '<bytes|unlimited|default>',
        required: true,
        description: 'a number of bytes, unlimited, or default (DEFAULT_QUOTA_BYTES, unlimited when unset)',
      },
      'max-file': {
        type: 'string',
        placeholder: '<bytes|none>',
        description:
          'the largest file it may upload, or none (the server’s MAX_FILE_SIZE alone); unchanged if left out',
      },
    },
    notes: `Examples:
  ${PROGRAM} accounts set-quota --email ann@example.com --quota 10000000000 --max-file 2000000000
  ${PROGRAM} accounts set-quota --email ann@example.com --quota default --max-file none`,
    async run(context) {
      const quota = option(context, 'quota')
      const change: QuotaChange = {
        quotaBytes:
          quota === 'unlimited' ? null : quota === 'default' ? 'default' : bytesOf(context, 'quota', quota),
      }
      const maxFile = context.values['max-file']
      if (typeof maxFile === 'string')
        change.maxFileBytes = maxFile === 'none' ? null : bytesOf(context, 'max-file', maxFile)
      const { accounts, quotas } = await context.services()
      const account = await accounts.getByEmail(option(context, 'email'))
      const usage = await quotas.set(account.id, change)
      const { quotaSetting, ...shown } = usage
      return {
        json: { id: account.id, email: account.email, quota: quotaSetting, ...shown },
        text: `${account.email}: ${describeQuota(usage, quotaSetting === 'default')}.`,
      }
    },
  },
  {
    group: 'accounts',
    name: 'list',
    summary: 'List every account, newest first',
    description: 'List every account, newest first.',
    flags: {},
    async run(context) {
      const { accounts } = await context.services()
      const all = await accounts.list()
      return {
        json: { accounts: all.map(accountJson) },
        text:
          all.length === 0
            ? `No accounts yet. Create one with: ${PROGRAM} accounts create --email <email>`
            : table(
                ['ID', 'EMAIL', 'ROLE', 'CREATED'],
                all.map((a) => [a.id, a.email, a.role, toIso(a.createdAt)]),
              ),
      }
    },
  },
  {
    group: 'accounts',
    name: 'set-password',
    summary: "Set an account's password, read from stdin",
    description:
      "Set an account's password. It is read from stdin, never from the command line, so that it stays out of shell history and process lists.",
    flags: { email: EMAIL, 'password-stdin': { ...PASSWORD_STDIN, required: true } },
    async run(context) {
      const email = option(context, 'email')
      if (!context.values['password-stdin']) {
        throw new UsageError('Missing option --password-stdin.', context.path)
      }
      const password = await context.readPassword()
      const { accounts } = await context.services()
      const account = await accounts.getByEmail(email)
      await accounts.setPassword(account.id, password)
      return {
        json: { id: account.id, email: account.email, passwordSet: true },
        text: `Set the password of ${account.email}.`,
      }
    },
  },
  {
    group: 'accounts',
    name: 'disable',
    summary: 'Disable an account: it signs in no more, and every credential it had stops working',
    description:
      'Disable an account. It can no longer sign in; its web sessions end, its API keys are revoked and its OAuth grants (with their tokens) removed, so every credential it had is refused on its next request. Its files stay.',
    flags: { email: EMAIL },
    async run(context) {
      const { accounts } = await context.services()
      const account = await accounts.disable(option(context, 'email'))
      return {
        json: { id: account.id, email: account.email, disabled: true },
        text: `Disabled ${account.email}: its sessions, API keys and OAuth grants were ended.`,
      }
    },
  },
  {
    group: 'accounts',
    name: 'enable',
    summary: 'Let a disabled account sign in again',
    description:
      'Let a disabled account sign in again. The credentials ended when it was disabled stay ended: it makes new API keys, and its applications ask again.',
    flags: { email: EMAIL },
    async run(context) {
      const { accounts } = await context.services()
      const account = await accounts.enable(option(context, 'email'))
      return {
        json: { id: account.id, email: account.email, disabled: false },
        text: `Enabled ${account.email}.`,
      }
    },
  },
  {
    group: 'keys',
    name: 'create',
    summary: 'Create an API key (its secret is shown once)',
    description:
      'Create an API key for an account. The key is printed once and never again: Coffer keeps only a hash of it.',
    flags: {
      email: EMAIL,
      scopes: {
        type: 'string',
        placeholder: '<scopes>',
        required: true,
        description: 'comma-separated scopes, or "all"',
      },
      name: {
        type: 'string',
        placeholder: '<name>',
        description: 'a label to recognise the key by, 1 to 100 characters (default "cli")',
      },
    },
    notes: SCOPE_HELP,
    async run(context) {
      const email = option(context, 'email')
      const scopes = scopesOf(context)
      const name = typeof context.values.name === 'string' ? context.values.name : 'cli'
      const { accounts, apiKeys } = await context.services()
      const account = await accounts.getByEmail(email)
      const { key, secret } = await apiKeys.create({ accountId: account.id, name, scopes })
      return {
        json: {
          id: key.id,
          key: secret,
          name: key.name,
          prefix: key.prefix,
          scopes: key.scopes,
          createdAt: toIso(key.createdAt),
        },
        text: [
          `Created API key ${key.id} "${key.name}" for ${account.email}, with scopes ${key.scopes.join(', ')}:`,
          '',
          `    ${secret}`,
          '',
          'This key is shown only once: store it now. Coffer keeps only a hash of it and cannot show it again.',
        ].join('\n'),
      }
    },
  },
  {
    group: 'keys',
    name: 'list',
    summary: "List an account's API keys (never their secrets)",
    description:
      "List an account's API keys, newest first, revoked ones included. Secrets are never shown: Coffer does not keep them.",
    flags: { email: EMAIL },
    async run(context) {
      const email = option(context, 'email')
      const { accounts, apiKeys } = await context.services()
      const account = await accounts.getByEmail(email)
      const keys = await apiKeys.list(account.id)
      return {
        json: { keys: keys.map(keyJson) },
        text:
          keys.length === 0
            ? `${account.email} has no API keys.`
            : table(
                ['ID', 'NAME', 'PREFIX', 'SCOPES', 'CREATED', 'LAST USED', 'REVOKED'],
                keys.map((k) => [
                  k.id,
                  k.name,
                  k.prefix,
                  k.scopes.join(','),
                  toIso(k.createdAt),
                  toIsoOrNull(k.lastUsedAt) ?? '-',
                  toIsoOrNull(k.revokedAt) ?? '-',
                ]),
              ),
      }
    },
  },
  {
    group: 'keys',
    name: 'revoke',
    summary: 'Revoke an API key, effective at once',
    description:
      'Revoke an API key: every request that uses it is refused from now on. Revoking a revoked key changes nothing.',
    flags: {
      id: { type: 'string', placeholder: '<key id>', required: true, description: 'the key to revoke' },
      email: {
        type: 'string',
        placeholder: '<email>',
        description: 'only revoke the key if it belongs to this account',
      },
    },
    async run(context) {
      const id = option(context, 'id')
      const email = typeof context.values.email === 'string' ? context.values.email : undefined
      const { accounts, apiKeys } = await context.services()
      const owner = email === undefined ? undefined : await accounts.getByEmail(email)
      const key = await apiKeys.revoke(id, owner?.id)
      return {
        json: keyJson(key),
        text: `Revoked API key ${key.id} "${key.name}" (${key.prefix}…) at ${toIsoOrNull(key.revokedAt)}.`,
      }
    },
  },
  {
    group: 'storage',
    name: 'check',
    summary: 'Compare the blob store with the database; --repair removes what is safe to',
    description:
      'Compare the blobs on disk with the rows of the database, while the server runs or not: blobs no row owns ' +
      "and no upload claims (a file's, or a preview whose file is gone), rows whose blob is missing, and what " +
      'unfinished writes left. Blobs and leftovers count as orphans only once older than the longest upload grant ' +
      '(at least an hour), since an upload may still claim them. Exits 1 when a row has lost its blob.',
    flags: {
      repair: {
        type: 'boolean',
        description: 'remove orphan blobs and stale leftovers (rows without blobs are only ever reported)',
      },
    },
    notes: 'The server runs the same check, repairing, at start and every STORAGE_CHECK_INTERVAL_SECONDS.',
    async run(context) {
      const { storage } = await context.services()
      const report = await storage.check({ repair: context.values.repair === true })
      return { json: { ...report }, text: storageText(report), exitCode: report.problems > 0 ? 1 : 0 }
    },
  },
  {
    group: 'backup',
    name: 'create',
    summary: 'Back up the database and every file into a new directory, while the server runs',
    description:
      'Copy the database (SQLite: an online snapshot; PostgreSQL: pg_dump, which must be installed) and the blobs ' +
      'of every file and preview into a new or empty directory, with a manifest written last. The server may go on ' +
      'serving: files deleted meanwhile keep their blobs until the backup has copied them.',
    flags: {
      to: { type: 'string', placeholder: '<dir>', required: true, description: 'where to write the backup' },
    },
    async run(context) {
      const to = option(context, 'to')
      const { backups } = await context.services()
      const manifest = await backups.backup(to)
      return {
        json: { to, ...manifest },
        text: `Backed up the ${manifest.engine} database and ${manifest.blobs} blobs (${manifest.bytes} bytes) into ${to}.`,
      }
    },
  },
  {
    group: 'backup',
    name: 'restore',
    summary: 'Restore a backup into an empty DATA_DIR (and, with PostgreSQL, an empty database)',
    description:
      'Bring back a backup made by "backup create": its database into the configured storage, which must be empty ' +
      '(no database in DATA_DIR; with DATABASE_URL, a database without tables; pg_restore must be installed), then ' +
      'its blobs into DATA_DIR/blobs. Start the server on it afterwards.',
    flags: {
      from: { type: 'string', placeholder: '<dir>', required: true, description: 'the backup to restore' },
    },
    async run(context) {
      const from = option(context, 'from')
      const manifest = await context.restoreDatabase(from)
      const { backups } = await context.services()
      const { blobs } = await backups.restoreBlobs(from)
      return {
        json: { from, engine: manifest.engine, createdAt: manifest.createdAt, blobs },
        text: `Restored the backup of ${manifest.createdAt}: the ${manifest.engine} database and ${blobs} blobs.`,
      }
    },
  },
]

/** A storage report for people: one line per finding, with the keys it names. */
function storageText(report: StorageReport): string {
  const line = (label: string, found: { count: number; sample: string[] }, extra = '') =>
    `${label}: ${found.count}${extra}${found.sample.length > 0 ? `\n  ${found.sample.join('\n  ')}` : ''}`
  const removed = (n: number) => (report.repair ? `, ${n} removed` : ' (run with --repair to remove)')
  return [
    `Storage check at ${report.checkedAt}: ${report.blobs.count} blobs, ${report.blobs.bytes} bytes.`,
    line(
      'Blobs without a file',
      report.orphanBlobs,
      report.orphanBlobs.count > 0 ? removed(report.orphanBlobs.removed) : '',
    ),
    line(
      'Previews without a file',
      report.orphanPreviews,
      report.orphanPreviews.count > 0 ? removed(report.orphanPreviews.removed) : '',
    ),
    `Blobs without a row yet, within the grace period (uploads under way): ${report.recentOrphans}`,
    line('Rows whose blob is MISSING (not repairable; restore from a backup)', report.missingBlobs),
    line(
      'Stale leftovers of unfinished writes',
      report.staleLeftovers,
      report.staleLeftovers.count > 0 ? removed(report.staleLeftovers.removed) : '',
    ),
    `Leftovers of writes under way: ${report.activeLeftovers}`,
    line(
      'Readiness probes left behind',
      report.strayProbes,
      report.strayProbes.count > 0 ? removed(report.strayProbes.removed) : '',
    ),
    line(
      'Objects Coffer did not write (never removed)',
      report.unrecognised,
      report.unrecognised.count > 0 ? `, ${report.unrecognised.bytes} bytes` : '',
    ),
  ].join('\n')
}
