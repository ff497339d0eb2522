// What the benchmarks share to run servers: a free port, a server script in a child process (Coffer, or the
// bare Fastify baseline), waiting until it answers, and stopping it; and the load generator, wrk, written in
// C: far faster than any server here, so its figures are the server's and not the client's (autocannon, in
// Node, was: it held lists of 50 files to a seventh of what wrk measured).
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface WrkFigures {
  rps: number
  /** Milliseconds. */
  p50: number
  p99: number
  requests: number
  errors: number
}

/** Fails with a clear message where wrk is missing. */
export async function requireWrk(): Promise<void> {
  await run('which', ['wrk']).catch(() => {
    throw new Error('wrk is not installed (apt-get install wrk)')
  })
}

const root = path.resolve(import.meta.dirname, '..')

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/**
 * Runs `script` (relative to the repository) with this Node and `env` added to the environment; `nodeArgs`
 * go to Node itself (`--cpu-prof`).
 */
export function startChild(
  script: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): ChildProcess {
  return spawn(process.execPath, [...nodeArgs, script], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** Resolves once `url` answers at all; fails if the child exits first or a minute passes. */
export async function waitForServer(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      await fetch(url)
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  throw new Error(`server at ${url} did not start`)
}

/** A wrk script that asks for the paths of the file named by WRK_PATHS (one a line), in turn, over and over. */
export const PATHS_SCRIPT = path.join(import.meta.dirname, 'paths.lua')

/**
 * wrk's figures: requests per second, p50 and p99 in ms, completed requests, and failures of any kind.
 * With `paths` (a file of paths, see PATHS_SCRIPT), it asks for those in turn instead of `url`'s path.
 */
export async function wrk(
  url: string,
  connections: number,
  seconds: number,
  headers: string[] = [],
  paths?: string,
): Promise<WrkFigures> {
  const headerArgs = headers.flatMap((header) => ['-H', header])
  const { stdout } = await run(
    'wrk',
    [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '--latency',
      ...headerArgs,
      ...(paths ? ['-s', PATHS_SCRIPT] : []),
      url,
    ],
    { env: { ...process.env, ...(paths ? { WRK_PATHS: paths } : {}) }, maxBuffer: 16 * 1024 * 1024 },
  )
  const ms = (label: string) => {
    const match = new RegExp(`^\\s+${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(stdout)
    if (!match) throw new Error(`no ${label}% latency in wrk's output:\n${stdout}`)
    const value = Number(match[1])
    return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value
  }
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1])
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0)
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0)
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]),
    p50: ms('50'),
    p99: ms('99'),
    requests,
    errors,
  }
}
