// The practical limit: a plain Node HTTP server that writes what it receives to disk and streams files back,
// with no framework, no database, no checks. Files are fsynced before the answer (`flush`), as the BlobStore
// does, so both sides give the same durability. Prints `{ base, pid }` and runs until SIGTERM.
//   PUT /files/<name>              stores the body             GET /files/<name>   streams it back
//   POST /handle, PUT /blob/, POST /blob/mpu   just enough of the @vercel/blob protocol for upload() to send
//   the same transfer as to Coffer: each 8 MiB part is written in place at its offset of the file.
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, open, rm, stat } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'

const PART_SIZE = 8 * 1024 * 1024
const dir = await mkdtemp(path.join(process.env.UPLOAD_SERVER_TMP ?? tmpdir(), 'coffer-plain-'))
const fileOf = (name: string) => path.join(dir, encodeURIComponent(name))

/** The blob the client expects back once a PUT or a multipart upload completes. */
function storedBlob(pathname: string) {
  return { url: '', downloadUrl: '', pathname, contentType: '', contentDisposition: '', etag: '"1"' }
}

function json(res: http.ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://plain')
  const blobName = url.searchParams.get('pathname') ?? ''
  if (req.method === 'PUT' && url.pathname.startsWith('/files/')) {
    await pipeline(req, createWriteStream(fileOf(url.pathname.slice(7)), { flush: true }))
    res.writeHead(201).end()
  } else if (req.method === 'GET' && url.pathname.startsWith('/files/')) {
    const file = fileOf(url.pathname.slice(7))
    const { size } = await stat(file)
    res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' })
    await pipeline(createReadStream(file), res)
  } else if (req.method === 'POST' && url.pathname === '/handle') {
    req.resume()
    json(res, {
      clientToken: `vercel_blob_client_plain_${Buffer.from('signature.payload').toString('base64')}`,
    })
  } else if (req.method === 'PUT' && url.pathname === '/blob/') {
    await pipeline(req, createWriteStream(fileOf(blobName), { flush: true }))
    json(res, storedBlob(blobName))
  } else if (req.method === 'POST' && url.pathname === '/blob/mpu') {
    const action = req.headers['x-mpu-action']
    if (action === 'create') {
      req.resume()
      await (await open(fileOf(blobName), 'w')).close()
      json(res, { uploadId: 'plain', key: blobName })
    } else if (action === 'upload') {
      const start = (Number(req.headers['x-mpu-part-number']) - 1) * PART_SIZE
      await pipeline(req, createWriteStream(fileOf(blobName), { flags: 'r+', start }))
      json(res, { etag: String(req.headers['x-mpu-part-number']) })
    } else {
      req.resume()
      const file = await open(fileOf(blobName), 'r+')
      await file.sync()
      await file.close()
      json(res, storedBlob(blobName))
    }
  } else {
    req.resume()
    res.writeHead(404).end()
  }
}

const server = http.createServer((req, res) => {
  handle(req, res).catch(() => res.destroy())
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number }
  process.stdout.write(`${JSON.stringify({ base: `http://127.0.0.1:${port}`, pid: process.pid })}\n`)
})
process.once('SIGTERM', async () => {
  server.closeAllConnections()
  server.close()
  await rm(dir, { recursive: true, force: true })
  process.exit(0)
})
