// Coffer as its operators run it: `node src/server.ts` in a process of its own, on a port of its own, for
// tests that need several processes on one database, or a server killed mid-work and started again.
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { after } from 'node:test'
import { freePort } from './uploads.ts'

const SERVER = path.resolve(import.meta.dirname, '../../src/server.ts')

/**
 * Every server still running. A test that fails midway must not leave one behind: its process would keep the
 * test file's from ever ending. They are killed once the file's tests are done.
 */
const running = new Set<ChildProcess>()
after(() => {
  for (const child of running) child.kill('SIGKILL')
})

export interface ServerProcess {
  base: string
  port: number
  child: ChildProcess
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>
  /** SIGKILL: the process dies at once, in the middle of whatever it was doing. */
  kill(): Promise<void>
  /** Resolves once the process has exited, at once if it has already: a fault point kills it by itself. */
  exited(): Promise<void>
  /** What the process printed on stdout so far: its log lines. */
  stdout(): string
  /** What it printed on stderr so far (the first-run setup link, say); the rest is passed on to this stderr. */
  stderr(): string
}

export interface ServerOptions {
  /**
   * A hosts file the process resolves names with instead of `/etc/hosts`, so that a test can make a real name
   * resolve (through the system's resolver, as in production) to any address, and change its answer while the
   * server runs (write the file in place). The server runs in a mount namespace of its own (`unshare`, as an
   * unprivileged user may) where the file is bound over `/etc/hosts`; the rest of the system is untouched.
   */
  hostsFile?: string
}

/** Starts the server with `env` on `port` (a free one if not given); resolves once /healthz answers. */
export async function startServer(
  env: Record<string, string>,
  port?: number,
  options: ServerOptions = {},
): Promise<ServerProcess> {
  const listenOn = port ?? (await freePort())
  const base = `http://127.0.0.1:${listenOn}`
  const [command, args] = options.hostsFile
    ? [
        'unshare',
        // `exec`: the shell becomes the server, so that a signal sent to the child reaches the server.
        [
          '--map-root-user',
          '--mount',
          'sh',
          '-c',
          'mount --bind "$0" /etc/hosts && exec "$@"',
          options.hostsFile,
        ].concat([process.execPath, SERVER]),
      ]
    : [process.execPath, [SERVER]]
  const child = spawn(command, args, {
    env: {
      ...process.env,
      PUBLIC_URL: base,
      // Stopped at once unless a test says otherwise: no load balancer needs the time to notice.
      SHUTDOWN_GRACE_SECONDS: '0',
      ...env,
      PORT: String(listenOn),
      HOST: '127.0.0.1',
      LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  let printed = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    if (printed.length < 1_000_000) printed += chunk
  })
  let printedOnStderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    // A crash's trace shows in the test's output; the setup link every new server prints would be noise.
    if (!chunk.includes('/account/setup/')) process.stderr.write(chunk)
    if (printedOnStderr.length < 1_000_000) printedOnStderr += chunk
  })
  const gone = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child)
      resolve()
    }),
  )
  const exit = (signal: NodeJS.Signals) => async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await gone
  }
  const server = {
    base,
    port: listenOn,
    child,
    stop: exit('SIGTERM'),
    kill: exit('SIGKILL'),
    exited: () => gone,
    stdout: () => printed,
    stderr: () => printedOnStderr,
  }
  // A server compiles every route's serializer as it starts, about 4 s of CPU: three starting at once beside
  // another test file on 2 cores took more than the 15 s this once allowed. A minute, then it has failed.
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    if (child.signalCode !== null)
      throw new Error(`the server was killed by ${child.signalCode} as it started`)
    try {
      if ((await fetch(`${base}/healthz`)).ok) return server
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await server.kill()
  throw new Error('the server did not start')
}
