// The clients' throughput (issue 27): a file of --size-mib (1 GiB) uploaded and downloaded through Coffer by
// the SDK and the coffer command, against the raw @vercel/blob client (uploads: the procedure by hand, as
// examples/upload.mjs) and curl (downloads), in the same run, on the same server; and the command's start time.
// The practical limit of the downloads: nginx (Debian's package) sending the same blob file with sendfile, to
// curl and to the SDK's reader (src/clients/sdk/save.ts), so that each client's speed from Coffer is seen against its
// speed from the fastest server here.
// The file is read from the page cache and downloads go to a file on the same disk, as a person's would.
//   npm run bench:clients -- [--size-mib 1024] [--runs 3]
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { upload } from '@vercel/blob/client'
import { Coffer } from '../src/clients/sdk/index.ts'
import { fetchToFile } from '../src/clients/sdk/save.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { wireAccounts } from '../src/wiring.ts'
import { type Nginx, nginxMissing, startNginx } from '../test/support/nginx.ts'
import { freePort, startChild, stopChild, waitForServer } from './processes.ts'

const { values } = parseArgs({
  options: { 'size-mib': { type: 'string', default: '1024' }, runs: { type: 'string', default: '3' } },
})
const SIZE = Number(values['size-mib']) * 1024 * 1024
const RUNS = Number(values.runs)
const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '..')
const CLI = path.join(ROOT, 'src', 'clients', 'coffer-cli', 'main.ts')

const dir = await mkdtemp(path.join(tmpdir(), 'coffer-clients-'))
const dataDir = path.join(dir, 'data')
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const server = startChild('src/server.ts', {
  DATA_DIR: dataDir,
  PORT: String(port),
  PUBLIC_URL: base,
  LOG_LEVEL: 'warn',
})
if (nginxMissing) throw new Error(nginxMissing)
let nginx: Nginx | undefined
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const mbps = (ms: number) => SIZE / 1e6 / (ms / 1000)

try {
  await waitForServer(`${base}/healthz`, server)
  const db = openDatabase({ databaseUrl: undefined, dataDir } as Parameters<typeof openDatabase>[0])
  const { accounts, apiKeys } = wireAccounts(db)
  const account = await accounts.create({ email: 'bench@example.com' })
  const { secret: key } = await apiKeys.create({
    accountId: account.id,
    name: 'bench',
    scopes: ['files:read', 'files:write'],
  })
  await db.close()

  const source = path.join(dir, 'source.bin')
  await writeFile(source, randomBytes(SIZE))
  await readFile(source) // into the page cache
  const coffer = new Coffer({ url: base, credentials: { apiKey: key } })
  const cliEnv = { ...process.env, COFFER_URL: base, COFFER_TOKEN: key, XDG_CONFIG_HOME: dir }
  const timed = async (work: () => Promise<unknown>) => {
    // What the runs before wrote is flushed first: a download or upload that ran into the disk's writeback of
    // the one before measured the disk (curl from Coffer gave 483 to 1,684 MB/s in runs of one day without it).
    await run('sync', [])
    const started = performance.now()
    await work()
    return performance.now() - started
  }

  // Uploads.
  const raw = async () => {
    const [grant] = await coffer.files.prepareUploads({
      files: [{ name: 'raw.bin', type: 'application/octet-stream', size: SIZE }],
    })
    if (!grant) throw new Error('no grant')
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    await upload(grant.pathname, createReadStream(source), {
      access: 'private',
      contentType: grant.contentType,
      handleUploadUrl: grant.handleUploadUrl,
      clientPayload: JSON.stringify(grant.clientPayload),
      multipart: true,
    })
    for (;;) {
      const status = await coffer.files.uploadStatus(grant.intentId)
      if (status.status !== 'pending') return status
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  let fileId = ''
  const uploads = { raw: [] as number[], sdk: [] as number[], cli: [] as number[] }
  for (let i = 0; i < RUNS; i++) {
    uploads.raw.push(await timed(raw))
    uploads.sdk.push(await timed(async () => (fileId = (await coffer.files.upload(source)).id)))
    uploads.cli.push(await timed(() => run(process.execPath, [CLI, 'upload', source], { env: cliEnv })))
  }

  // Downloads. The blob file nginx sends is the one Coffer sends for the file.
  const reader = openDatabase({ databaseUrl: undefined, dataDir } as Parameters<typeof openDatabase>[0])
  const { blob_key: blobKey } = await reader.kysely
    .selectFrom('files')
    .select('blob_key')
    .where('id', '=', fileId)
    .executeTakeFirstOrThrow()
  await reader.close()
  const blobPath = await (await LocalBlobStore.open(path.join(dataDir, 'blobs'))).relativePath(blobKey)
  if (!blobPath) throw new Error(`no blob file for ${blobKey}`)
  // nginx's workers (nobody) pass through the temporary directory to the data directory startNginx opens.
  await chmod(dir, 0o755)
  nginx = await startNginx({ upstream: `127.0.0.1:${port}`, dataDir, direct: true })
  const target = path.join(dir, 'copy.bin')
  const direct = `${nginx.directBase}/${blobPath}`
  const readerFromNginx = async () => {
    const toFile = fetchToFile({ path: target, append: false }, { fallback: fetch, overSocket: true })
    const response = await toFile(new Request(direct))
    if (!response.ok) throw new Error(`nginx answered ${response.status}`)
  }
  const downloads = {
    nginxCurl: [] as number[],
    nginxReader: [] as number[],
    curl: [] as number[],
    sdk: [] as number[],
    cli: [] as number[],
  }
  for (let i = 0; i < RUNS; i++) {
    await rm(target, { force: true })
    downloads.nginxCurl.push(await timed(() => run('curl', ['-sSf', '-o', target, direct])))
    await rm(target, { force: true })
    downloads.nginxReader.push(await timed(readerFromNginx))
    if ((await stat(target)).size !== SIZE) throw new Error('the download from nginx is short')
    await rm(target, { force: true })
    downloads.curl.push(
      await timed(() =>
        run('curl', [
          '-sSf',
          '-o',
          target,
          '-H',
          `authorization: Bearer ${key}`,
          `${base}/api/v1/files/${fileId}/download`,
        ]),
      ),
    )
    await rm(target, { force: true })
    downloads.sdk.push(await timed(() => coffer.files.downloadTo(fileId, target)))
    await rm(target, { force: true })
    downloads.cli.push(
      await timed(() => run(process.execPath, [CLI, 'download', fileId, '-o', target], { env: cliEnv })),
    )
    if ((await stat(target)).size !== SIZE) throw new Error('the download is short')
  }

  const starts: number[] = []
  for (let i = 0; i < 10; i++) starts.push(await timed(() => run(process.execPath, [CLI, '--help'])))

  const row = (name: string, ms: number[], reference: number[]) => {
    const spread = `${mbps(Math.max(...ms)).toFixed(0)}–${mbps(Math.min(...ms)).toFixed(0)}`
    return `| ${name} | ${mbps(median(ms)).toFixed(0)} | ${spread} | ${(median(reference) / median(ms)).toFixed(2)} |`
  }
  console.log(`\nClients, ${SIZE / 1024 / 1024} MiB, median of ${RUNS} (SQLite, local blobs)\n`)
  console.log('| upload | MB/s | runs | of the raw client |\n|---|---:|---:|---:|')
  console.log(row('raw @vercel/blob client', uploads.raw, uploads.raw))
  console.log(row('SDK files.upload(path)', uploads.sdk, uploads.raw))
  console.log(row('coffer upload', uploads.cli, uploads.raw))
  console.log('\n| download | MB/s | runs | of curl |\n|---|---:|---:|---:|')
  console.log(row('practical limit: nginx sendfile to curl', downloads.nginxCurl, downloads.curl))
  console.log(
    row("practical limit: nginx sendfile to the SDK's reader", downloads.nginxReader, downloads.curl),
  )
  console.log(row('curl', downloads.curl, downloads.curl))
  console.log(row('SDK files.downloadTo(path)', downloads.sdk, downloads.curl))
  console.log(row('coffer download', downloads.cli, downloads.curl))
  console.log(
    `\ncoffer --help: median ${median(starts).toFixed(0)} ms of 10 runs (min ${Math.min(...starts).toFixed(0)})`,
  )
} finally {
  await nginx?.stop()
  await stopChild(server)
  await rm(dir, { recursive: true, force: true })
}
