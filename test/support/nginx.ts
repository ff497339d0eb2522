// A real nginx (Debian's package) in front of a real Coffer, for the tests and the benchmark of downloads
// through X-Accel-Redirect. It runs the configuration of examples/nginx.conf, the one the README documents,
// with only its addresses and paths replaced, as a child process (`daemon off`) on a free port of 127.0.0.1,
// with every file it writes in a temporary directory.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from './uploads.ts'

export const NGINX = '/usr/sbin/nginx'
/** Why tests that need nginx cannot run here, or false. CI installs it (.ci/run). */
export const nginxMissing: string | false = existsSync(NGINX)
  ? false
  : `${NGINX} is absent: apt-get install -y nginx (CI installs it)`

/** DOWNLOAD_ACCEL_REDIRECT for the location of examples/nginx.conf. */
export const ACCEL_PREFIX = '/_coffer_blobs/'

export const EXAMPLE_CONFIG = path.resolve(import.meta.dirname, '../../examples/nginx.conf')
export const FLEET_CONFIG = path.resolve(import.meta.dirname, '../../examples/nginx-fleet.conf')

export interface Nginx {
  /** nginx in front of Coffer, as examples/nginx.conf sets it up. */
  base: string
  /** With `direct`: the same nginx serving the blob directory itself, at `/<blob path>`. */
  directBase: string | undefined
  pid: number
  /** What nginx wrote to its error log so far. */
  errors(): Promise<string>
  /**
   * Its access log (the fleet's nginx only): a line per request, `<method> <path> <status> <seconds>
   * <upstreams>`, the seconds it took (to the millisecond), the upstreams tried separated by ", ".
   */
  requests(): Promise<string>
  stop(): Promise<void>
}

export interface NginxOptions {
  /** Coffer's address, host:port. */
  upstream: string
  /** Coffer's DATA_DIR; nginx serves its `blobs/`. */
  dataDir: string
  /** Also serve the blob directory on a port of its own, without Coffer (the benchmark's baseline). */
  direct?: boolean
}

function replaceOnce(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `examples/nginx.conf has exactly one "${from}"`)
  return text.replace(from, to)
}

async function listening(port: number, child: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) {
      const errors = await readFile(log, 'utf8').catch(() => '')
      throw new Error(`nginx exited with ${child.exitCode}: ${errors}`)
    }
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (up) return
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * nginx in front of several Coffer processes, round-robin, as examples/nginx-fleet.conf sets it up; on `port`
 * (the processes' PUBLIC_URL names it before nginx starts).
 */
export async function startFleetNginx(options: {
  upstreams: string[]
  port: number
  /** Whether to log each request for `requests()` (the tests); benchmarks go without. */
  logRequests?: boolean
}): Promise<Nginx> {
  let site = await readFile(FLEET_CONFIG, 'utf8')
  site = replaceOnce(site, 'listen 80;', `listen 127.0.0.1:${options.port};`)
  // Its processes' lines, with their parameters, for as many as the caller runs (fewer drop the last ones).
  const servers = site.match(/ {4}server 127\.0\.0\.1:808\d( [^;]*)?;\n/g) ?? []
  assert.ok(servers.length >= options.upstreams.length, 'examples/nginx-fleet.conf names enough processes')
  for (const [i, line] of servers.entries()) {
    const upstream = options.upstreams[i]
    site = site.replace(line, upstream ? line.replace(/127\.0\.0\.1:808\d/, upstream) : '')
  }
  return runNginx(site, options.port, undefined, options.logRequests ?? true)
}

export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const blobs = path.join(options.dataDir, 'blobs')
  // Run as root, nginx's workers drop to `nobody`, which must be able to read the blobs: a data directory
  // from mkdtemp is private to its owner. The blob files and directories themselves are 0644 and 0755.
  await chmod(options.dataDir, 0o755)
  const port = await freePort()
  const directPort = options.direct ? await freePort() : undefined

  let site = await readFile(EXAMPLE_CONFIG, 'utf8')
  site = replaceOnce(site, 'listen 80;', `listen 127.0.0.1:${port};`)
  site = replaceOnce(site, 'server 127.0.0.1:8080;', `server ${options.upstream};`)
  site = replaceOnce(site, 'alias /var/lib/coffer/blobs/;', `alias ${blobs}/;`)
  assert.ok(site.includes(`location ${ACCEL_PREFIX} {`), `examples/nginx.conf serves ${ACCEL_PREFIX}`)
  const direct = directPort
    ? `  server {\n    listen 127.0.0.1:${directPort};\n    location / { root ${blobs}; }\n  }\n`
    : ''
  return runNginx(site + direct, port, directPort)
}

/** Runs `site` (server blocks) in a main configuration of its own, in the foreground, until `stop`. */
async function runNginx(
  site: string,
  port: number,
  directPort?: number,
  logRequests = false,
): Promise<Nginx> {
  const dir = await mkdtemp(path.join(tmpdir(), 'coffer-nginx-'))
  await mkdir(path.join(dir, 'temp'))
  const temp = path.join(dir, 'temp')
  const log = path.join(dir, 'error.log')
  const access = path.join(dir, 'access.log')
  const accessLog = logRequests
    ? `log_format upstreams '$request_method $uri $status $request_time $upstream_addr';\n  access_log ${access} upstreams;`
    : 'access_log off;'
  // The main configuration: Debian's, as far as it matters here (sendfile, tcp_nopush, gzip), in the
  // foreground.
  const config = `daemon off;
worker_processes 1;
pid ${path.join(dir, 'nginx.pid')};
error_log ${log} warn;
events { worker_connections 4096; }
http {
  ${accessLog}
  client_body_temp_path ${temp}/client;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  sendfile on;
  tcp_nopush on;
  gzip on;
  default_type application/octet-stream;
${site}
}
`
  const file = path.join(dir, 'nginx.conf')
  await writeFile(file, config)
  const child = spawn(NGINX, ['-e', log, '-p', dir, '-c', file], { stdio: ['ignore', 'ignore', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    await listening(port, child, log)
    if (directPort) await listening(directPort, child, log)
  } catch (error) {
    child.kill('SIGTERM')
    await exited
    await rm(dir, { recursive: true, force: true })
    throw error
  }
  return {
    base: `http://127.0.0.1:${port}`,
    directBase: directPort ? `http://127.0.0.1:${directPort}` : undefined,
    pid: child.pid as number,
    errors: () => readFile(log, 'utf8'),
    requests: () => readFile(access, 'utf8').catch(() => ''),
    async stop() {
      // SIGTERM is nginx's fast shutdown: the master ends its workers, then itself.
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}
