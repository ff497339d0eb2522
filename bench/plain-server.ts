// The practical limit: a plain Node HTTP server that streams request bodies to disk and files back, with no
// framework, no database and no checks. Writes are fsynced at the end (`flush`), as the BlobStore's are, so
// both sides give the same durability. Prints `{ base, pid }` and runs until SIGTERM.
//   PUT /<name>   stores the body          GET /<name>   streams it back
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'

const dir = await mkdtemp(path.join(process.env.UPLOAD_SERVER_TMP ?? tmpdir(), 'coffer-plain-'))
const fileOf = (url: string) => path.join(dir, encodeURIComponent(url.slice(1)))

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === 'PUT') {
      await pipeline(req, createWriteStream(fileOf(req.url ?? '/'), { flush: true }))
      res.writeHead(201).end()
    } else if (req.method === 'GET') {
      const file = fileOf(req.url ?? '/')
      const { size } = await stat(file)
      res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' })
      await pipeline(createReadStream(file), res)
    } else {
      res.writeHead(405).end()
    }
  } catch {
    res.destroy()
  }
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
