// Helpers shared by the command-line tool's tests (cli.test.ts and cli-storage.test.ts): the tool run as a
// real process on given storage, its output parsed exactly as a script would, and the accounts and keys it
// makes.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import type { TestContext } from './harness.ts'

export const ROOT = path.resolve(import.meta.dirname, '../..')
export const MAIN = path.join(ROOT, 'src/admin-cli/main.ts')

export interface Storage {
  dataDir: string
  databaseUrl: string | undefined
  /** The settings of an S3 bucket holding the blobs (BLOB_STORE=s3 ...); none for the local disk. */
  blobEnv?: Record<string, string>
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

export function envFor(storage: Storage, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: storage.dataDir, ...storage.blobEnv, ...extra }
  delete env.DATABASE_URL
  if (storage.databaseUrl) env.DATABASE_URL = storage.databaseUrl
  return env
}

export function run(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    // A CLI that leaves its database open never exits: that is a failure, not a slow test.
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${args.join(' ')} did not exit; stderr: ${stderr}`))
    }, options.timeoutMs ?? 30_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.stdin ?? '')
  })
}

export const storageOf = (ctx: TestContext): Storage => ({
  dataDir: ctx.dataDir,
  databaseUrl: ctx.config.databaseUrl,
  blobEnv: ctx.bucket?.env,
})

export function cli(ctx: TestContext | Storage, args: string[], stdin?: string): Promise<Run> {
  const storage = 'app' in ctx ? storageOf(ctx) : ctx
  return run(process.execPath, [MAIN, ...args], { env: envFor(storage), stdin })
}

/** Runs a --json command that must succeed; stdout must be exactly one JSON object and a newline. */
export async function cliJson(ctx: TestContext | Storage, args: string[], stdin?: string): Promise<any> {
  const res = await cli(ctx, [...args, '--json'], stdin)
  assert.equal(res.code, 0, `${args.join(' ')} failed: ${res.stderr}`)
  assert.equal(res.stderr, '')
  const body = JSON.parse(res.stdout)
  assert.equal(res.stdout, `${JSON.stringify(body)}\n`)
  assert.equal(typeof body, 'object')
  assert.ok(body !== null && !Array.isArray(body))
  return body
}

export const newEmail = () => `cli-${randomBytes(5).toString('hex')}@example.com`

export async function newAccount(ctx: TestContext | Storage): Promise<{ id: string; email: string }> {
  const email = newEmail()
  return cliJson(ctx, ['accounts', 'create', '--email', email])
}

export async function newKey(
  ctx: TestContext | Storage,
  email: string,
  scopes: string,
  name = 'test',
): Promise<any> {
  return cliJson(ctx, ['keys', 'create', '--email', email, '--scopes', scopes, '--name', name])
}
