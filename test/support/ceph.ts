// A throw-away Ceph cluster for the tests that run on S3: one monitor, one OSD keeping its objects in memory
// (`memstore`), one RADOS Gateway speaking S3 on 127.0.0.1, from an empty directory in about a second and a
// half. Made from ../shared/tools/ceph/start-ceph.sh, which records what works on this machine kind: the
// settings that make it fast and small are `paxos propose interval`, a pool size of one and no ceph-mgr.
// Each caller gets a cluster of its own, on ports of its own, so test files may run at once.
//
// Needs the Debian packages radosgw, ceph-mon, ceph-osd and ceph-common (.ci/run installs them); without them,
// `cephMissing` says why and the tests that need S3 are skipped with that reason.
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { freePort } from './ports.ts'

const run = promisify(execFile)

const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'ceph-authtool', 'monmaptool', 'radosgw-admin', 'ceph']

/** Why S3 tests cannot run here, or false when they can. */
export const cephMissing: string | false = (() => {
  const missing = BINARIES.filter((name) => spawnSync('which', [name]).status !== 0)
  return missing.length === 0
    ? false
    : `Ceph is not installed (${missing.join(', ')} missing): apt-get install --no-install-recommends radosgw ceph-mon ceph-osd ceph-common`
})()

/** An S3 endpoint and the credentials of its user. */
export interface S3Endpoint {
  /** http://127.0.0.1:<port> */
  endpoint: string
  accessKeyId: string
  secretAccessKey: string
}

/** A client configured as Coffer configures its own (path-style, checksums only where required, silent). */
export function s3ClientOf(s3: S3Endpoint): S3Client {
  return new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  })
}

/** What a Coffer process needs to keep its blobs in `bucket` of this endpoint. */
export function s3EnvOf(s3: S3Endpoint, bucket: string): Record<string, string> {
  return {
    BLOB_STORE: 's3',
    S3_BUCKET: bucket,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  }
}

export interface Ceph extends S3Endpoint {
  /** What a Coffer process needs to use bucket `bucket` of this cluster. */
  env(bucket: string, prefix?: string): Record<string, string>
  /** A client of the gateway, as Coffer configures its own. */
  client(): S3Client
  /** Makes a bucket. */
  createBucket(name: string): Promise<void>
  /**
   * The RADOS Gateway alone, for the tests of an object store that fails (the cluster behind it stays up):
   * `kill` it (SIGKILL: connections are refused), `start` it again (resolves once it answers), `freeze` it
   * (SIGSTOP: connections are accepted by the kernel, and nothing answers) and `thaw` it.
   */
  gateway: {
    kill(): Promise<void>
    start(): Promise<void>
    freeze(): Promise<void>
    thaw(): Promise<void>
  }
  stop(): Promise<void>
}

/** Starts a cluster in a new temporary directory; `stop` kills its daemons and removes the directory. */
/**
 * `collectAfterSeconds`: how soon the gateway frees the data of deleted objects (its garbage collection, every
 * so many seconds): 60 for the tests, whose few megabytes can wait; a benchmark that writes gigabytes into the
 * 4 GiB of memory asks for less.
 */
export async function startCeph(options: { collectAfterSeconds?: number } = {}): Promise<Ceph> {
  const collectAfter = options.collectAfterSeconds ?? 60
  if (cephMissing) throw new Error(cephMissing)
  const dir = await mkdtemp(path.join(tmpdir(), 'coffer-ceph-'))
  const monPort = await freePort()
  const rgwPort = await freePort()
  // The OSD binds a port of its own from a range; a random one keeps two clusters apart.
  const osdPortMin = 20_000 + Math.floor(Math.random() * 400) * 100
  const accessKeyId = `COFFER${randomBytes(7).toString('hex').toUpperCase()}`
  const secretAccessKey = randomBytes(20).toString('hex')
  const conf = path.join(dir, 'ceph.conf')
  const keyring = path.join(dir, 'keyring')
  for (const sub of ['run', 'log', 'mon.a', 'osd.0']) await mkdir(path.join(dir, sub))
  await writeFile(
    conf,
    `[global]
fsid = ${randomUUID()}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind port min = ${osdPortMin}
ms bind port max = ${osdPortMin + 99}
keyring = ${keyring}
run dir = ${dir}/run
crash dir = ${dir}/crash
admin socket = ${dir}/run/$name.asok
pid file = ${dir}/run/$name.pid
log file = ${dir}/log/$name.log
mon data = ${dir}/mon.$id
osd data = ${dir}/osd.$id
mon allow pool size one = true
mon data avail crit = 0
paxos propose interval = 0.05
paxos min wait = 0.01
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 4294967296
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw thread pool size = 64
rgw gc obj min wait = ${collectAfter}
rgw gc processor period = ${collectAfter}
`,
  )
  const env = { ...process.env, CEPH_CONF: conf }
  const ceph = (command: string, ...args: string[]) => run(command, args, { env })
  const stop = async () => {
    await killDaemons(dir)
    await rm(dir, { recursive: true, force: true })
  }
  try {
    // A key per daemon and for the admin, each with its capabilities (`--cap <service> <rights>`).
    const key = (name: string, caps: Record<string, string>) =>
      ceph(
        'ceph-authtool',
        keyring,
        '-g',
        '-n',
        name,
        ...Object.entries(caps).flatMap(([on, rights]) => ['--cap', on, rights]),
      )
    await ceph('ceph-authtool', '-C', keyring, '-g', '-n', 'mon.', '--cap', 'mon', 'allow *')
    await key('client.admin', { mon: 'allow *', osd: 'allow *', mgr: 'allow *' })
    await key('osd.0', { mon: 'allow profile osd', osd: 'allow *' })
    await key('client.rgw', { mon: 'allow rw', osd: 'allow rwx' })
    const fsid = (await ceph('ceph-conf', '--lookup', 'fsid')).stdout.trim()
    const monmap = path.join(dir, 'monmap')
    await ceph(
      'monmaptool',
      '--create',
      '--enable-all-features',
      '--fsid',
      fsid,
      '--addv',
      'a',
      `[v2:127.0.0.1:${monPort}]`,
      monmap,
    )
    await ceph('ceph-mon', '-i', 'a', '--mkfs', '--monmap', monmap, '--keyring', keyring)
    await ceph('ceph-mon', '-i', 'a')
    const osdUuid = randomUUID()
    await ceph('ceph', 'osd', 'new', osdUuid, '0')
    await ceph('ceph-osd', '-i', '0', '--mkfs', '--osd-uuid', osdUuid)
    await ceph('ceph-osd', '-i', '0')
    await ceph(
      'radosgw-admin',
      'user',
      'create',
      '--uid=coffer',
      '--display-name=Coffer tests',
      `--access-key=${accessKeyId}`,
      `--secret=${secretAccessKey}`,
    )
    await ceph('radosgw', '-n', 'client.rgw')
  } catch (error) {
    await stop()
    throw error
  }
  const endpoint: S3Endpoint = { endpoint: `http://127.0.0.1:${rgwPort}`, accessKeyId, secretAccessKey }
  const client = () => s3ClientOf(endpoint)
  const gatewayPid = async () => Number(await readFile(path.join(dir, 'run', 'client.rgw.pid'), 'utf8'))
  const signalGateway = async (signal: NodeJS.Signals) => {
    process.kill(await gatewayPid(), signal)
  }
  const cluster: Ceph = {
    ...endpoint,
    env: (bucket, prefix) => ({ ...s3EnvOf(endpoint, bucket), ...(prefix ? { S3_PREFIX: prefix } : {}) }),
    client,
    async createBucket(name) {
      const s3 = client()
      try {
        await s3.send(new CreateBucketCommand({ Bucket: name }))
      } finally {
        s3.destroy()
      }
    },
    gateway: {
      async kill() {
        const pid = await gatewayPid()
        process.kill(pid, 'SIGKILL')
        await gone(pid)
      },
      async start() {
        await ceph('radosgw', '-n', 'client.rgw')
        await untilAnswering(cluster, dir)
      },
      freeze: () => signalGateway('SIGSTOP'),
      thaw: () => signalGateway('SIGCONT'),
    },
    stop,
  }
  await untilAnswering(cluster, dir)
  return cluster
}

/** Resolves once the process `pid` has ended (a zombie counts as ended). */
async function gone(pid: number): Promise<void> {
  while (existsSync(`/proc/${pid}`)) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
    if (/^State:\s+Z/m.test(status)) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Waits until the gateway answers a signed request (it takes a moment after it starts). */
async function untilAnswering(cluster: Ceph, dir: string): Promise<void> {
  const deadline = Date.now() + 30_000
  const s3 = cluster.client()
  try {
    for (;;) {
      try {
        await s3.send(new CreateBucketCommand({ Bucket: 'coffer-probe' }))
        return
      } catch (error) {
        if (Date.now() > deadline) {
          const log = await readFile(path.join(dir, 'log', 'client.rgw.log'), 'utf8').catch(() => '')
          await cluster.stop()
          throw new Error(`the Ceph gateway did not answer within 30 s: ${error}\n${log.slice(-2000)}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  } finally {
    s3.destroy()
  }
}

/** Kills the cluster's daemons by their pid files and waits until they are gone. */
async function killDaemons(dir: string): Promise<void> {
  const runDir = path.join(dir, 'run')
  if (!existsSync(runDir)) return
  for (const file of await readdir(runDir)) {
    if (!file.endsWith('.pid')) continue
    const pid = Number(await readFile(path.join(runDir, file), 'utf8'))
    try {
      // A frozen daemon (gateway.freeze) dies of SIGKILL all the same.
      process.kill(pid, 'SIGKILL')
    } catch {
      continue
    }
    await gone(pid)
  }
}
