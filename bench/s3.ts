// Blobs in S3-compatible storage (issue 24): Coffer against the AWS SDK's own clients, through the same Ceph
// gateway (a throw-away cluster, test/support/ceph.ts), in the same run, in turns:
//   - upload of one file (1 GiB by default): the SDK's lib-storage Upload straight to the bucket (8 MiB parts,
//     four at a time) against the @vercel/blob client through Coffer (8 MiB parts), until the upload's status
//     is `complete` (the object joined and the file recorded; its SHA-256 and CRC-32 are computed afterwards,
//     by one read of the object, files/file-digests.job.ts). Both clients read the file in part-sized
//     chunks: with fs's default of 64 KiB the @vercel/blob client turns each chunk through a web stream and
//     spends about twice the CPU (10 against 5.6 s per GiB here), on the cores the server and the gateway use;
//     the SDK gains from it too;
//   - download: curl from the gateway itself (a presigned GET of the object Coffer serves: the store's own
//     speed with a client faster than Node's), curl through Coffer streaming the bytes, and curl following
//     Coffer's redirect to a presigned GET (DOWNLOAD_REDIRECT=presigned), in an order that turns with each run;
//     each against the SDK's GetObject read to the end in Node (Coffer's own way to the store) and against curl
//     from the gateway.
// Figures are MB/s, the median of the runs, and each Coffer figure as a share of its reference.
//   npm run bench:s3 -- [--size-mib 1024] [--runs 3]
// Coffer runs as `npm start` does, on SQLite, in two processes on one bucket: one streaming downloads, one
// redirecting them.
import { spawnSync } from 'node:child_process'
import { createReadStream, createWriteStream, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { startCeph } from '../test/support/ceph.ts'
import { newAccount, newKey } from '../test/support/cli-helpers.ts'
import { startServer } from '../test/support/server-process.ts'
import { prepareUploads, seededStream, uploadWithGrant, waitForUpload } from '../test/support/uploads.ts'

const { values } = parseArgs({
  options: { 'size-mib': { type: 'string', default: '1024' }, runs: { type: 'string', default: '3' } },
})
const size = Number(values['size-mib']) * 1024 * 1024
const runs = Number(values.runs)
const PART = 8 * 1024 * 1024

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const mbps = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000)

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await work()
  return performance.now() - started
}

/** CPU seconds (user and system) a process has used so far, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** curl to /dev/null, following redirects; the bytes it received must be the file's. */
function curl(url: string, headers: string[] = []): number {
  const started = performance.now()
  const run = spawnSync('curl', ['-sS', '-L', '-o', '/dev/null', '-w', '%{size_download}', ...headers, url])
  const ms = performance.now() - started
  if (run.status !== 0 || Number(run.stdout.toString()) !== size) {
    throw new Error(`curl ${url}: ${run.stderr.toString()} (${run.stdout.toString()} bytes)`)
  }
  return ms
}

// Each run writes 2 GiB into the cluster's 4 GiB of memory: the deleted objects must go before the next.
const ceph = await startCeph({ collectAfterSeconds: 5 })
const tmp = await mkdtemp(path.join(tmpdir(), 'coffer-bench-s3-'))
try {
  await ceph.createBucket('bench')
  const file = path.join(tmp, 'file.bin')
  await pipeline(seededStream(size, 7), createWriteStream(file))
  const s3 = ceph.client()
  const storage = { dataDir: path.join(tmp, 'data'), databaseUrl: undefined, blobEnv: ceph.env('bench') }
  const account = await newAccount(storage)
  const { key: token } = await newKey(storage, account.email, 'all')
  const env = { DATA_DIR: storage.dataDir, ...storage.blobEnv, RATE_LIMIT_MAX: '100000' }
  const streaming = await startServer(env)
  const redirecting = await startServer({ ...env, DOWNLOAD_REDIRECT: 'presigned' })
  process.env.VERCEL_BLOB_API_URL = `${streaming.base}/blob`

  const figures: Record<string, number[]> = {
    sdkUp: [],
    cofferUpCpu: [],
    cofferUp: [],
    sdkDown: [],
    direct: [],
    streamed: [],
    presigned: [],
  }
  let fileId = ''
  for (let run = 0; run < runs; run++) {
    const sdkKey = `sdk-${run}`
    figures.sdkUp?.push(
      await timed(() =>
        new Upload({
          client: s3,
          params: { Bucket: 'bench', Key: sdkKey, Body: createReadStream(file, { highWaterMark: PART }) },
          partSize: PART,
          queueSize: 4,
        }).done(),
      ),
    )
    const [grant] = await prepareUploads(streaming.base, token, [
      { name: 'big.bin', type: 'application/octet-stream', size },
    ])
    if (!grant) throw new Error('no grant')
    const cpuBefore = cpuSeconds(streaming.child.pid)
    figures.cofferUp?.push(
      await timed(async () => {
        await uploadWithGrant(grant, createReadStream(file, { highWaterMark: PART })).catch(
          (error: unknown) => {
            throw new Error(`the upload failed; the server said:\n${streaming.stdout().slice(-3000)}`, {
              cause: error,
            })
          },
        )
        const status = await waitForUpload(grant, token, 600_000)
        if (status.status !== 'complete') throw new Error(`upload ended ${JSON.stringify(status)}`)
        fileId = status.result.id
      }),
    )
    figures.cofferUpCpu?.push(cpuSeconds(streaming.child.pid) - cpuBefore)

    figures.sdkDown?.push(
      await timed(async () => {
        const answer = await s3.send(new GetObjectCommand({ Bucket: 'bench', Key: sdkKey }))
        let got = 0
        for await (const chunk of answer.Body as AsyncIterable<Buffer>) got += chunk.length
        if (got !== size) throw new Error(`GetObject gave ${got} bytes`)
      }),
    )
    // The very object Coffer serves (blob keys: files/<account>/<file>), straight from the gateway.
    const direct = await getSignedUrl(
      s3,
      new GetObjectCommand({ Bucket: 'bench', Key: `files/${account.id}/${fileId}` }),
      { expiresIn: 600 },
    )
    // Once untimed: the first read of a new object is the gateway's slowest, whoever asks. Then the three in
    // an order that turns with each run, so that none is always first or last.
    curl(direct)
    const auth = ['-H', `Authorization: Bearer ${token}`]
    const downloads: [string, () => number][] = [
      ['direct', () => curl(direct)],
      ['streamed', () => curl(`${streaming.base}/api/v1/files/${fileId}/download`, auth)],
      ['presigned', () => curl(`${redirecting.base}/api/v1/files/${fileId}/download`, auth)],
    ]
    for (let i = 0; i < downloads.length; i++) {
      const [name, download] = downloads[(run + i) % downloads.length] as [string, () => number]
      figures[name]?.push(download())
    }
    // The cluster keeps objects in memory (4 GiB): each run's go.
    await s3.send(new DeleteObjectCommand({ Bucket: 'bench', Key: sdkKey }))
    const deleted = await fetch(`${streaming.base}/api/v1/files/${fileId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    })
    if (!deleted.ok) throw new Error(`deleting the file: ${deleted.status}`)
  }
  const rate = (name: string) => mbps(size, median(figures[name] ?? []))
  const line = (label: string, name: string, against: string) =>
    `${label.padEnd(44)} ${rate(name).toFixed(0).padStart(6)} MB/s  ${(rate(name) / rate(against)).toFixed(2)} of the reference`
  console.log(`S3 through Ceph's gateway, ${size / 1024 / 1024} MiB, median of ${runs} runs`)
  console.log(
    `${'upload: SDK Upload (8 MiB parts, 4 at once)'.padEnd(44)} ${rate('sdkUp').toFixed(0).padStart(6)} MB/s`,
  )
  console.log(line('upload: @vercel/blob client through Coffer', 'cofferUp', 'sdkUp'))
  console.log(
    `${'  CPU of the Coffer process per GiB'.padEnd(44)} ${(median(figures.cofferUpCpu ?? []) / (size / 1024 ** 3)).toFixed(1).padStart(6)} s`,
  )
  console.log(`${'download: curl from the gateway'.padEnd(44)} ${rate('direct').toFixed(0).padStart(6)} MB/s`)
  console.log(`${'download: SDK GetObject (Node)'.padEnd(44)} ${rate('sdkDown').toFixed(0).padStart(6)} MB/s`)
  const against = (name: string, reference: string) => (rate(name) / rate(reference)).toFixed(2)
  for (const [label, name] of [
    ['download: curl, Coffer streaming', 'streamed'],
    ['download: curl, Coffer redirecting (presigned)', 'presigned'],
  ] as const) {
    console.log(
      `${label.padEnd(44)} ${rate(name).toFixed(0).padStart(6)} MB/s  ${against(name, 'sdkDown')} of GetObject, ${against(name, 'direct')} of curl from the gateway`,
    )
  }
  await streaming.stop()
  await redirecting.stop()
  s3.destroy()
} finally {
  await ceph.stop()
  await rm(tmp, { recursive: true, force: true })
}
