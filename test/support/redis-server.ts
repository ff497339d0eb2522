// A Redis server of a test's own, on a port of its own, for the tests that stop Redis under a running fleet
// and start it again: the machine's shared server is every other test file's. Keeps nothing on disk.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { connect } from 'node:net'
import { freePort } from './ports.ts'

/** Why a Redis server of the test's own cannot run here, or false. */
export const redisServerMissing: string | false =
  spawnSync('sh', ['-c', 'command -v redis-server']).status === 0
    ? false
    : 'redis-server is absent: apt-get install redis-server'

export interface RedisServer {
  /** redis://127.0.0.1:<port> */
  url: string
  /** SIGKILL: every connection is cut, and new ones are refused. */
  kill(): Promise<void>
  /** Starts it again on the same port (empty); resolves once it takes connections. */
  start(): Promise<void>
  stop(): Promise<void>
}

export async function startRedisServer(): Promise<RedisServer> {
  if (redisServerMissing) throw new Error(redisServerMissing)
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    const started = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    )
    child = started
    const deadline = Date.now() + 10_000
    for (;;) {
      if (started.exitCode !== null) throw new Error(`redis-server exited with ${started.exitCode}`)
      if (await accepts(port)) return
      if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const kill = async () => {
    const running = child
    child = undefined
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }
  await start()
  return { url: `redis://127.0.0.1:${port}`, kill, start, stop: kill }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
