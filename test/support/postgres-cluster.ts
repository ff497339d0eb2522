// A throw-away PostgreSQL cluster of a test's own (`initdb` in a temporary directory, on a port of its own), for
// the tests that stop the database under a running fleet and start it again: the machine's shared server must
// never be stopped, since every other test file uses it. Stopped with `-m immediate` (as a crash or a failover
// would: every connection is cut at once, nothing is shut down cleanly) and started on the same port and data.
//
// Runs PostgreSQL's own binaries (Debian's postgresql package, or whichever `initdb` is on the PATH). initdb
// refuses to run as root: as root, the cluster is made and run as the `postgres` user.
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './ports.ts'

const run = promisify(execFile)

/** The directory of PostgreSQL's server programs: Debian's newest, else the PATH's. */
function binDir(): string | undefined {
  const debian = '/usr/lib/postgresql'
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(path.join(debian, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return path.join(debian, versions[0], 'bin')
  }
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim()
  return found ? path.dirname(found) : undefined
}

const BIN = binDir()
const asRoot = process.getuid?.() === 0
const postgresUser = asRoot ? spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }) : undefined

/** Why a cluster of the test's own cannot be made here, or false. */
export const clusterMissing: string | false = !BIN
  ? 'PostgreSQL server programs (initdb, pg_ctl) are absent: apt-get install postgresql'
  : asRoot && postgresUser?.status !== 0
    ? 'running as root, and there is no postgres user to run a cluster as'
    : false

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  port: number
  /** Stops it as a crash would: `pg_ctl stop -m immediate`. */
  crash(): Promise<void>
  /** Starts it again on the same port and data; resolves once it takes connections. */
  start(): Promise<void>
  /** Stops it (if running) and removes its directory. */
  destroy(): Promise<void>
}

/** Runs a PostgreSQL program, as the postgres user when this process is root. */
function program(name: string, args: string[]) {
  const file = path.join(BIN as string, name)
  if (!asRoot) return run(file, args)
  return run('runuser', ['-u', 'postgres', '--', file, ...args])
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  if (clusterMissing) throw new Error(clusterMissing)
  const dir = await mkdtemp(path.join(tmpdir(), 'coffer-pg-'))
  if (asRoot) {
    const uid = Number(postgresUser?.stdout.trim())
    await chown(dir, uid, uid)
  }
  const data = path.join(dir, 'data')
  const port = await freePort()
  await program('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'])
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    // Speed over durability against a crash of the machine, which the test's data never outlive. A commit is
    // still acknowledged only once its WAL is written (synchronous_commit stays on): an immediate stop loses
    // none, as a crash of PostgreSQL alone would not.
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
  ].join(' ')
  const start = async () => {
    await program('pg_ctl', [
      '-D',
      data,
      '-o',
      options,
      '-l',
      path.join(dir, 'log'),
      '-w',
      '-t',
      '60',
      'start',
    ])
  }
  await start()
  let running = true
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async crash() {
      await program('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      running = false
    },
    async start() {
      await start()
      running = true
    },
    async destroy() {
      if (running) await program('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
      running = false
      await rm(dir, { recursive: true, force: true })
    },
  }
}
