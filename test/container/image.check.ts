// The container image that test/container/run.sh built from the Containerfile (COFFER_IMAGE), tried with what
// runs on this machine: `buildah run --isolation chroot`, which shares the host's network and process table, so
// the server in the image listens on 127.0.0.1 here and its process is seen in /proc. Checked: its configuration
// (unprivileged user, /data volume, port 8080, health check), what it holds (production dependencies only,
// sharp's binaries for linux-x64, the built assets), then the server it starts: its setup link, an account and a
// key made with the admin command the image ships, uploads through the real @vercel/blob client (one in parts),
// downloads compared byte for byte, an image preview made by sharp in the image, a share link downloaded by
// anyone, the HEALTHCHECK's own command, the files under /data owned by the image's user, a clean stop on
// SIGTERM, and the README's backup and restore: a new container restored from the backup serves the same files.
// buildah gives each container's /data volume a directory of its own (it ignores a `-v` onto an image's VOLUME),
// so the admin command runs in the server's container, as `podman exec` would, and /data is read through the
// server's /proc/<pid>/root. Not in `npm test` (it needs the image, minutes to build): test/container/run.sh.
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chown, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { upload } from '@vercel/blob/client'
import sharp from 'sharp'

const IMAGE = process.env.COFFER_IMAGE
const PREFIX = process.env.COFFER_CONTAINER_PREFIX ?? `coffer-image-check-${process.pid}`
const MiB = 1024 * 1024

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Runs buildah; rejects with its stderr when it fails or outlasts `timeoutMs`. */
function buildah(args: string[], options: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'buildah',
      args,
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 * MiB, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`buildah ${args.slice(0, 3).join(' ')} failed: ${error.message} ${stderr}`))
        else resolve(stdout)
      },
    )
    child.stdin?.end(options.input ?? '')
  })
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The pids under `pid` in the process table (chroot isolation keeps the host's). */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>()
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '')
    const parent = /^PPid:\s+(\d+)/m.exec(status)?.[1]
    if (parent) parents.set(Number(entry), Number(parent))
  }
  const found: number[] = []
  for (const [child] of parents) {
    for (let up = parents.get(child); up !== undefined; up = parents.get(up)) {
      if (up === pid) {
        found.push(child)
        break
      }
      if (up <= 1) break
    }
  }
  return found
}

interface ImageConfig {
  User: string
  ExposedPorts?: Record<string, unknown>
  Env: string[]
  Entrypoint?: string[] | null
  Cmd: string[]
  WorkingDir: string
  Volumes?: Record<string, unknown>
  Healthcheck?: { Test: string[]; Interval: number; Timeout: number; Retries: number }
}

/** A server started in a container with `buildah run`, as `podman run` would start it. */
interface RunningServer {
  base: string
  /** buildah run, whose child runs the server. */
  child: ChildProcess
  exited: Promise<number | null>
  /** The server's own process (node): killing buildah would leave it running. */
  pid: number
  stderr(): string
  stdout(): string
}

/** The server's stderr for a failure message, without the setup link's secret. */
const redacted = (text: string) => text.replace(/coffer_setup_[\w-]+/g, 'coffer_setup_…').slice(-3000)

describe('the container image', {
  skip: IMAGE ? false : 'COFFER_IMAGE is not set: test/container/run.sh builds the image and runs this',
}, () => {
  const image = IMAGE as string
  let config: ImageConfig
  /** The container the server runs in; the admin command runs in it too, as with `podman exec`. */
  const container = `${PREFIX}-server`
  /** A container made later, into whose empty /data the backup is restored. */
  const restoredContainer = `${PREFIX}-restored`
  let rootfs: string
  /** A host directory mounted at /backups (buildah honours `-v` everywhere but on the image's VOLUME). */
  let backups: string
  let imageUid: number
  let key: string
  const auth = () => ({ authorization: `Bearer ${key}` })
  const servers: RunningServer[] = []

  /** Runs `command` in `where` (as the image's user, on its /data), with `input` on stdin. */
  const inImage = (
    command: string[],
    options: { input?: string; env?: Record<string, string>; where?: string } = {},
  ) =>
    buildah(
      [
        'run',
        '--isolation',
        'chroot',
        '-v',
        `${backups}:/backups`,
        ...Object.entries(options.env ?? {}).flatMap(([name, value]) => ['--env', `${name}=${value}`]),
        options.where ?? container,
        '--',
        ...command,
      ],
      { input: options.input, timeoutMs: 120_000 },
    )
  const cli = (args: string[], options: { input?: string; where?: string } = {}) =>
    inImage(['npm', 'run', '--silent', 'cli', '--', ...args], options)

  /** Starts the image's entrypoint and command in `where`, on 127.0.0.1; resolves once /healthz answers. */
  async function startServer(where: string): Promise<RunningServer> {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const started = Date.now()
    const child = spawn(
      'buildah',
      [
        'run',
        '--isolation',
        'chroot',
        '-v',
        `${backups}:/backups`,
        // Only on loopback: chroot isolation listens in the host's network.
        '--env',
        'HOST=127.0.0.1',
        '--env',
        `PORT=${port}`,
        '--env',
        `PUBLIC_URL=${base}`,
        '--env',
        'SHUTDOWN_GRACE_SECONDS=0',
        where,
        '--',
        // What `podman run` would start: the entrypoint with the command.
        ...(config.Entrypoint ?? []),
        ...config.Cmd,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    const server = { base, child, exited, pid: 0, stderr: () => stderr, stdout: () => stdout }
    servers.push(server)
    for (;;) {
      assert.equal(child.exitCode, null, `the server exited: ${redacted(stderr)}`)
      assert.ok(Date.now() - started < 60_000, 'the server answers /healthz within a minute')
      const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(
        () => undefined,
      )
      if (health?.ok) break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    console.log(`# the server in ${where} answered /healthz ${Date.now() - started} ms after buildah run`)
    for (const pid of await descendants(child.pid as number)) {
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')
      if (cmdline.includes('src/server.ts')) server.pid = pid
    }
    assert.ok(server.pid, 'the server process is under buildah run')
    return server
  }

  /**
   * SIGTERM, which `podman stop` sends to the container's first process (here the server: the entrypoint execs
   * it): it drains and exits 0. Sent to the server itself: buildah run ends its child with SIGKILL when it is
   * signalled, which no engine does.
   */
  async function stopServer(server: RunningServer): Promise<void> {
    process.kill(server.pid, 'SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const code = await Promise.race([
      server.exited,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('no exit within 20 s'), 20_000)
      }),
    ])
    clearTimeout(timer)
    assert.equal(code, 0, `the server stopped cleanly: ${redacted(server.stderr())}`)
  }

  before(async () => {
    const inspected = JSON.parse(await buildah(['inspect', '--type', 'image', image]))
    config = inspected.Docker.config
    await buildah(['from', '--name', container, image])
    rootfs = (await buildah(['mount', container])).trim()
    const passwd = await readFile(path.join(rootfs, 'etc/passwd'), 'utf8')
    const line = passwd
      .split('\n')
      .find((entry) => entry.split(':')[0] === config.User || entry.split(':')[2] === config.User)
    assert.ok(line, `the image's user ${config.User} is in its /etc/passwd`)
    imageUid = Number(line.split(':')[2])
    backups = await mkdtemp(path.join(tmpdir(), 'coffer-image-backups-'))
    await chown(backups, imageUid, imageUid)
  })

  after(async () => {
    for (const server of servers) {
      if (server.child.exitCode !== null || server.child.signalCode !== null) continue
      if (server.pid) process.kill(server.pid, 'SIGKILL')
      else server.child.kill('SIGKILL')
      await server.exited
    }
    for (const name of [container, restoredContainer]) await buildah(['rm', name]).catch(() => {})
    if (backups) await rm(backups, { recursive: true, force: true })
  })

  test('its configuration: an unprivileged user, the /data volume, port 8080, a health check on /healthz', () => {
    assert.notEqual(imageUid, 0, 'the server does not run as root')
    assert.ok(config.User && config.User !== 'root' && config.User !== '0', `USER is ${config.User}`)
    assert.deepEqual(Object.keys(config.Volumes ?? {}), ['/data'])
    assert.deepEqual(Object.keys(config.ExposedPorts ?? {}), ['8080/tcp'])
    assert.ok(config.Env.includes('DATA_DIR=/data'), 'DATA_DIR is the volume')
    assert.ok(config.Env.includes('PORT=8080'))
    const check = config.Healthcheck?.Test ?? []
    assert.equal(check[0], 'CMD', 'the HEALTHCHECK runs a command of the image (no shell, no curl)')
    assert.match(check.join(' '), /\/healthz/)
    assert.deepEqual(config.Cmd, ['node', 'src/server.ts'], 'node itself runs the server: SIGTERM reaches it')
  })

  test('what it holds: Node 24, the production dependencies only, sharp for linux-x64, the built assets', async () => {
    const app = path.join(rootfs, config.WorkingDir)
    const pkg = JSON.parse(await readFile(path.join(app, 'package.json'), 'utf8'))
    // Nothing the lockfile installs for development only (a devDependency that a production dependency also
    // needs, such as @smithy/types, is production's), and not the `node` package's 120 MB: the image has Node.
    const lock = JSON.parse(await readFile(path.join(app, 'package-lock.json'), 'utf8'))
    const devOnly = Object.entries(lock.packages as Record<string, { dev?: boolean }>)
      .filter(([where, entry]) => where.startsWith('node_modules/') && entry.dev)
      .map(([where]) => where)
    assert.ok(devOnly.includes('node_modules/node'))
    for (const where of devOnly) assert.ok(!existsSync(path.join(app, where)), `${where} is not in the image`)
    for (const name of Object.keys(pkg.dependencies)) {
      assert.ok(
        existsSync(path.join(app, 'node_modules', name, 'package.json')),
        `dependency ${name} is there`,
      )
    }
    for (const name of ['@img/sharp-linux-x64', '@img/sharp-libvips-linux-x64']) {
      assert.ok(existsSync(path.join(app, 'node_modules', name, 'package.json')), `${name} is there`)
    }
    const manifest = JSON.parse(await readFile(path.join(app, 'dist', 'manifest.json'), 'utf8'))
    for (const file of Object.values(manifest.files) as string[]) {
      assert.ok(existsSync(path.join(app, 'dist', 'assets', file)), `asset ${file} was built`)
    }
    for (const absent of ['test', 'bench', '.git', 'data', 'Containerfile']) {
      assert.ok(!existsSync(path.join(app, absent)), `${absent} is left out of the image`)
    }
    // The code is root's: the server writes under /data only.
    assert.equal((await stat(path.join(app, 'src'))).uid, 0)
    assert.equal((await stat(path.join(app, 'dist'))).uid, 0)
    // The volume's directory is the image user's, so that a new volume made from it is too.
    assert.equal((await stat(path.join(rootfs, 'data'))).uid, imageUid)
    assert.match((await inImage(['node', '--version'])).trim(), /^v24\./)
  })

  test('the server: setup link, account, uploads, downloads, preview, share link, health check, backup, restore', async () => {
    const server = await startServer(container)
    const { base } = server
    assert.equal((await fetch(`${base}/readyz`)).status, 200)

    // It runs as the image's user.
    const status = await readFile(`/proc/${server.pid}/status`, 'utf8')
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)?.slice(1).map(Number)
    assert.deepEqual(
      uids,
      [imageUid, imageUid, imageUid, imageUid],
      'every uid of the server is the image user',
    )
    // /data is a volume: a mount of its own in the server's view.
    const mounts = await readFile(`/proc/${server.pid}/mountinfo`, 'utf8')
    assert.ok(
      mounts.split('\n').some((entry) => entry.split(' ')[4] === '/data'),
      '/data is mounted',
    )
    const dataDir = `/proc/${server.pid}/root/data`

    // A new server prints the first account's setup link on stderr, and the link is a page.
    const link = new RegExp(`${base}/account/setup/coffer_setup_[A-Za-z0-9_-]+`).exec(server.stderr())?.[0]
    assert.ok(link, 'the setup link is printed')
    assert.equal((await fetch(link)).status, 200)

    // An account and a key, with the admin command the image ships (through npm, as the README says).
    const email = `check-${randomBytes(4).toString('hex')}@example.com`
    const account = JSON.parse(
      await cli(['accounts', 'create', '--email', email, '--password-stdin', '--json'], {
        input: 'a long enough password\n',
      }),
    )
    assert.equal(account.email, email)
    const made = JSON.parse(
      await cli(['keys', 'create', '--email', email, '--scopes', 'all', '--name', 'image-check', '--json']),
    )
    key = made.key
    assert.ok(key)

    // Uploads with the real @vercel/blob client: an image, and 12 MiB in parts.
    const png = await sharp({
      create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 60, b: 30 } },
    })
      .png()
      .toBuffer()
    const big = randomBytes(12 * MiB)
    const index = await (await fetch(`${base}/api/v1`, { headers: auth() })).json()
    const blobApiUrl: string = (index.data ?? index).uploads?.blobApiUrl ?? ''
    assert.ok(blobApiUrl.startsWith(base), `the blob API is the server in the image: ${blobApiUrl}`)
    // upload() sends the bytes where this variable says: the server in the image.
    process.env.VERCEL_BLOB_API_URL = blobApiUrl
    const uploadOne = async (name: string, type: string, bytes: Buffer) => {
      const prepared = await fetch(`${base}/api/v1/files`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ files: [{ name, type, size: bytes.length }] }),
      })
      const body = await prepared.json()
      assert.equal(prepared.status, 201, JSON.stringify(body))
      const [grant] = body.data.uploads
      await upload(grant.pathname, new Blob([new Uint8Array(bytes)]), {
        access: 'private',
        contentType: grant.contentType,
        handleUploadUrl: grant.handleUploadUrl,
        clientPayload: JSON.stringify(grant.clientPayload),
        multipart: bytes.length > 5 * MiB,
      })
      const deadline = Date.now() + 60_000
      for (;;) {
        const state = (await (await fetch(grant.statusUrl, { headers: auth() })).json()).data
        assert.notEqual(state.status, 'error', `upload of ${name}: ${JSON.stringify(state)}`)
        if (state.status !== 'pending') return state.result.id as string
        assert.ok(Date.now() < deadline, `the upload of ${name} completes within a minute`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    const pictureId = await uploadOne('picture.png', 'image/png', png)
    const bigId = await uploadOne('big.bin', 'application/octet-stream', big)

    // Downloads, byte for byte.
    const downloaded = async (from: string, id: string) => {
      const download = await fetch(`${from}/api/v1/files/${id}/download`, { headers: auth() })
      assert.equal(download.status, 200)
      return sha256(new Uint8Array(await download.arrayBuffer()))
    }
    assert.equal(await downloaded(base, pictureId), sha256(png))
    assert.equal(await downloaded(base, bigId), sha256(big))

    // sharp, in the image, made the picture's preview.
    const preview = await fetch(`${base}/api/v1/files/${pictureId}/preview`, { headers: auth() })
    assert.equal(preview.status, 200)
    assert.equal(preview.headers.get('content-type'), 'image/webp')
    const previewMeta = await sharp(Buffer.from(await preview.arrayBuffer())).metadata()
    assert.equal(previewMeta.format, 'webp')
    assert.ok((previewMeta.width ?? 0) <= 512)

    // A share link: its page, and its download for anyone, without a credential.
    const shared = await fetch(`${base}/api/v1/shares`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ fileId: bigId }),
    })
    assert.equal(shared.status, 201)
    const share = (await shared.json()).data
    assert.ok(share.publicUrl.startsWith(`${base}/s/`), share.publicUrl)
    const page = await fetch(share.publicUrl)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /big\.bin/)
    const publicDownload = await fetch(`${share.publicUrl}/download`)
    assert.equal(publicDownload.status, 200)
    assert.equal(sha256(new Uint8Array(await publicDownload.arrayBuffer())), sha256(big))

    // The image's HEALTHCHECK command, as the engine runs it: in the container, with its environment.
    const healthcheck = config.Healthcheck?.Test.slice(1) ?? []
    await inImage(healthcheck, { env: { PORT: new URL(base).port } })
    await assert.rejects(
      inImage(healthcheck, { env: { PORT: String(await freePort()) } }),
      'and fails where nothing answers',
    )

    // Everything landed under /data, owned by the image's user.
    assert.ok(existsSync(path.join(dataDir, 'coffer.sqlite')), 'the SQLite database is in /data')
    const blobs: string[] = []
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name)
        if (entry.isDirectory()) await walk(full)
        else blobs.push(full)
      }
    }
    await walk(path.join(dataDir, 'blobs'))
    const sizes = await Promise.all(blobs.map(async (file) => (await stat(file)).size))
    assert.ok(sizes.includes(big.length), 'the 12 MiB file is a blob under /data/blobs')
    for (const file of [path.join(dataDir, 'coffer.sqlite'), ...blobs]) {
      assert.equal(
        (await stat(file)).uid,
        imageUid,
        `${path.relative(dataDir, file)} belongs to the image's user`,
      )
    }

    // The README's backup: while the server runs, into a volume of its own (SQLite: no PostgreSQL client).
    await cli(['backup', 'create', '--to', '/backups/check', '--json'])
    assert.ok(existsSync(path.join(backups, 'check', 'manifest.json')), 'the backup is complete')

    await stopServer(server)
    assert.ok(!server.stdout().includes(key), 'the key is not in the log')

    // Restored into a new container's empty /data, it serves the same files to the same key.
    await buildah(['from', '--name', restoredContainer, image])
    await cli(['backup', 'restore', '--from', '/backups/check', '--json'], { where: restoredContainer })
    const restored = await startServer(restoredContainer)
    assert.equal(await downloaded(restored.base, bigId), sha256(big))
    assert.equal(await downloaded(restored.base, pictureId), sha256(png))
    await stopServer(restored)
  })
})
