// The admin command (`npm run cli`, started by main.ts): manages accounts and API keys on the server's own storage (DATA_DIR or
// DATABASE_URL), also while the server runs. With --json, stdout carries exactly one JSON object, the
// result or the error envelope; people read stderr for errors. Exit codes: 0 done, 1 failed, 2 usage.

import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../platform/config.ts'
import type { Db } from '../platform/db/database.ts'
import { AppError, ERROR_CODES, type ErrorCode } from '../platform/errors.ts'
import {
  type CliServices,
  COMMANDS,
  type Command,
  type Context,
  type Flag,
  PROGRAM,
  UsageError,
  type Values,
} from './commands.ts'
import { readPassword } from './password.ts'

const COMMON_FLAGS: Record<string, Flag> = {
  json: { type: 'boolean', description: 'print one JSON object on stdout, and nothing else' },
}
const GROUPS = [...new Set(COMMANDS.map((c) => c.group))]
const isHelp = (arg: string) => arg === '--help' || arg === '-h'

// The services' default hints speak of HTTP requests; these speak of the command line.
const HINTS: Partial<Record<ErrorCode, string>> = {
  invalid_request: 'Fix the value the message names; add --help to the command to see its options.',
  not_found: `Check the email or ID: "${PROGRAM} accounts list" and "${PROGRAM} keys list --email <email>" show what exists.`,
  conflict: 'It exists already: use the existing one, or choose another email address.',
  unavailable: 'Check DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite), and that the database is reachable.',
  internal_error: 'Retry; if it persists, report it with the message above.',
}

function wrap(text: string, width = 100): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else {
      line = line ? `${line} ${word}` : word
    }
  }
  return [...lines, line].join('\n')
}

function commandList(commands: Command[]): string {
  const names = commands.map((c) => `${c.group} ${c.name}`)
  const width = Math.max(...names.map((n) => n.length)) + 2
  return commands.map((c, i) => `  ${names[i]?.padEnd(width)}${c.summary}`).join('\n')
}

function groupHelp(group: string | undefined): string {
  const commands = COMMANDS.filter((c) => group === undefined || c.group === group)
  return [
    group === undefined ? 'Coffer command-line tool: accounts and API keys.' : `Coffer ${group} commands.`,
    '',
    `Usage: ${PROGRAM} ${group ?? '<group>'} <command> [options]`,
    '',
    'Commands:',
    commandList(commands),
    '',
    `Add --help to a command for its options. Every command takes --json, to print one JSON object on`,
    'stdout and nothing else (on failure the error envelope {"error":{"code","message","hint"}}); run it',
    'as "npm run --silent cli -- ..." so that npm prints nothing of its own on stdout.',
    '',
    "Storage: the server's own, from the same settings: PostgreSQL at DATABASE_URL if set, else SQLite in",
    'DATA_DIR (default ./data). The schema is brought up to date first; the server may be running.',
    '',
    'Exit codes: 0 done, 1 failed, 2 usage error.',
  ].join('\n')
}

function commandHelp(command: Command): string {
  const flags = Object.entries({ ...command.flags, ...COMMON_FLAGS })
  const spelled = (name: string, flag: Flag) => `--${name}${flag.placeholder ? ` ${flag.placeholder}` : ''}`
  const usage = flags.map(([name, flag]) =>
    flag.required ? spelled(name, flag) : `[${spelled(name, flag)}]`,
  )
  const rows = [
    ...flags.map(([name, flag]) => [spelled(name, flag), flag.description]),
    ['-h, --help', 'show this help'],
  ]
  const width = Math.max(...rows.map(([left]) => left?.length ?? 0)) + 2
  return [
    wrap(command.description),
    '',
    `Usage: ${PROGRAM} ${command.group} ${command.name} ${usage.join(' ')}`,
    '',
    'Options:',
    ...rows.map(([left, right]) => `  ${left?.padEnd(width)}${right}`),
    ...(command.notes ? ['', command.notes] : []),
  ].join('\n')
}

function helpOf(path: string): string {
  const [group, name] = path.split(' ')
  const command = COMMANDS.find((c) => c.group === group && c.name === name)
  if (command) return commandHelp(command)
  return groupHelp(group && GROUPS.includes(group) ? group : undefined)
}

type Invocation = { help: string } | { command: Command; values: Values }

/** Resolves the command line without --json, which main() takes wherever it stands. */
function resolve(argv: string[]): Invocation {
  const [group, name, ...rest] = argv
  if (group === undefined) throw new UsageError('Missing command.', '')
  if (isHelp(group)) return { help: groupHelp(undefined) }
  if (!GROUPS.includes(group)) throw new UsageError(`Unknown command "${group}".`, '')
  if (name === undefined) throw new UsageError(`Missing ${group} command.`, group)
  if (isHelp(name)) return { help: groupHelp(group) }
  const command = COMMANDS.find((c) => c.group === group && c.name === name)
  const path = `${group} ${name}`
  if (!command) throw new UsageError(`Unknown command "${path}".`, group)
  if (rest.some(isHelp)) return { help: commandHelp(command) }

  // --json is taken out before; listing it still explains `--json=x` properly.
  const flags = { ...command.flags, ...COMMON_FLAGS }
  const options: Record<string, { type: 'string' | 'boolean'; multiple: false }> = Object.fromEntries(
    Object.entries(flags).map(([flag, { type }]) => [flag, { type, multiple: false }]),
  )
  let values: Values
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) throw error
    // Node's first sentence names the culprit ("Unknown option '--x'"); the rest advises on positionals.
    throw new UsageError(`${(error as Error).message.split('. ')[0]?.replace(/\.$/, '')}.`, path)
  }
  for (const [flag, { required }] of Object.entries(flags)) {
    if (required && values[flag] === undefined) throw new UsageError(`Missing option --${flag}.`, path)
  }
  return { command, values }
}

/** The innermost cause: pg reports a refused connection as an AggregateError with an empty message. */
function rootMessage(error: unknown): string {
  let current = error
  while (current instanceof Error && current.cause !== undefined) current = current.cause
  if (current instanceof AggregateError && current.errors.length > 0) return rootMessage(current.errors[0])
  if (current instanceof Error) return current.message || String((current as { code?: unknown }).code)
  return String(current)
}

interface Storage {
  db: Db
  services: CliServices
}

/**
 * The storage and the services, loaded only by a command that uses them: most of the CLI's start is loading
 * the server's modules, which help, usage errors and a restore do not need.
 */
async function openStorage(): Promise<Storage> {
  const [
    { openDatabase },
    { migrate },
    { openBlobStore },
    { wireAccounts },
    { wireStorage },
    { wireQuotas },
  ] = await Promise.all([
    import('../platform/db/open.ts'),
    import('../platform/db/migrate.ts'),
    import('../platform/blob/open-blob-store.ts'),
    import('../wiring.ts'),
    import('../resources/maintenance/maintenance.module.ts'),
    import('../resources/quotas/quotas.module.ts'),
  ])
  const config = loadConfig()
  // Credentials in DATABASE_URL stay out of messages.
  const url = config.databaseUrl === undefined ? undefined : new URL(config.databaseUrl)
  const where = url
    ? `PostgreSQL database ${url.pathname.slice(1)} on ${url.host}`
    : `SQLite database in ${config.dataDir}`
  let db: Db | undefined
  try {
    db = openDatabase({ ...config, poolSize: 2 })
    await migrate(db)
  } catch (error) {
    await db?.close()
    throw new AppError('unavailable', `Cannot open the ${where}: ${rootMessage(error)}`)
  }
  const blobs = await openBlobStore(config)
  return {
    db,
    services: { ...wireAccounts(db), ...wireStorage(db, blobs, config), ...wireQuotas(db, config) },
  }
}

function failure(error: unknown): { code: ErrorCode; message: string; hint: string; exitCode: number } {
  if (error instanceof UsageError) {
    const help = `${PROGRAM} ${error.path ? `${error.path} ` : ''}--help`
    return { code: 'invalid_request', message: error.message, hint: `Run "${help}" for usage.`, exitCode: 2 }
  }
  if (error instanceof ConfigError) {
    return {
      code: 'invalid_request',
      message: `Configuration error: ${error.message}.`,
      hint: 'Fix the environment variable the message names; the CLI reads the same ones as the server.',
      exitCode: 1,
    }
  }
  if (error instanceof AppError) {
    const hint = error.hint === ERROR_CODES[error.code].hint ? (HINTS[error.code] ?? error.hint) : error.hint
    return { code: error.code, message: error.message, hint, exitCode: 1 }
  }
  return {
    code: 'internal_error',
    message: `Unexpected failure: ${rootMessage(error)}`,
    hint: HINTS.internal_error ?? ERROR_CODES.internal_error.hint,
    exitCode: 1,
  }
}

export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json')
  let storage: Storage | undefined
  try {
    const invocation = resolve(argv.filter((arg) => arg !== '--json'))
    if ('help' in invocation) {
      process.stdout.write(`${invocation.help}\n`)
      return 0
    }
    const { command, values } = invocation
    const context: Context = {
      values,
      path: `${command.group} ${command.name}`,
      services: async () => {
        storage ??= await openStorage()
        return storage.services
      },
      readPassword: () => readPassword(process.stdin, process.stderr),
      restoreDatabase: async (from) => {
        const [{ openDatabase }, { BackupsRepository }, { restoreDatabase }] = await Promise.all([
          import('../platform/db/open.ts'),
          import('../resources/maintenance/backups.repository.ts'),
          import('../resources/maintenance/backups.service.ts'),
        ])
        const config = loadConfig()
        const probe = config.databaseUrl ? openDatabase({ ...config, poolSize: 1 }) : undefined
        try {
          return await restoreDatabase({
            from,
            engine: config.databaseUrl ? 'postgres' : 'sqlite',
            dataDir: config.dataDir,
            databaseUrl: config.databaseUrl,
            targetIsEmpty: async () => (probe ? new BackupsRepository(probe).isEmpty() : true),
          })
        } finally {
          await probe?.close()
        }
      },
    }
    const result = await command.run(context)
    process.stdout.write(`${json ? JSON.stringify(result.json) : result.text}\n`)
    return result.exitCode ?? 0
  } catch (error) {
    const { exitCode, ...envelope } = failure(error)
    process.stderr.write(`error: ${envelope.message}\n`)
    if (error instanceof UsageError) process.stderr.write(`\n${helpOf(error.path)}\n`)
    if (json) process.stdout.write(`${JSON.stringify({ error: envelope })}\n`)
    return exitCode
  } finally {
    await storage?.db.close()
  }
}
