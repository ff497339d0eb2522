// The `coffer` command as its tests run it: a real process of src/clients/coffer-cli/main.ts with only the
// environment given (no credentials of the machine's user leak in), either to its exit (`runCoffer`), started to be stopped midway (`startCoffer`) or as the MCP
// server a client speaks to over stdio (`connectMcp`).
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

export const COFFER_MAIN = path.resolve(
  import.meta.dirname,
  '..',
  '..',
  'src',
  'clients',
  'coffer-cli',
  'main.ts',
)

export interface CofferRun {
  /** The exit code; -1 when a signal ended it. */
  code: number
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * Starts `coffer args…` without a terminal, with PATH, a HOME that does not exist (unless `env` gives one) and
 * `env`; `stdin` is written to it and closed. `done` resolves with its exit and output once it has exited.
 */
export function startCoffer(
  args: string[],
  env: Record<string, string>,
  stdin = '',
): { child: ChildProcess; done: Promise<CofferRun> } {
  const child = spawn(process.execPath, [COFFER_MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const done = new Promise<CofferRun>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr }))
  })
  child.stdin.end(stdin)
  return { child, done }
}

/** Runs `coffer args…` as `startCoffer` does, to its exit. */
export function runCoffer(args: string[], env: Record<string, string>, stdin = ''): Promise<CofferRun> {
  return startCoffer(args, env, stdin).done
}

/** An MCP client connected to `coffer mcp …options` signed in to `base` with `token`. Close it when done. */
export async function connectMcp(base: string, token: string, options: string[] = []): Promise<Client> {
  const client = new Client({ name: 'coffer-test', version: '1.0.0' })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [COFFER_MAIN, 'mcp', ...options],
      env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', COFFER_URL: base, COFFER_TOKEN: token },
      stderr: 'pipe',
    }),
  )
  return client
}
