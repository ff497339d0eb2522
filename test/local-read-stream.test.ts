// The stream of a local blob (src/platform/blob/local-read-stream.ts): piped into a socket or an HTTP response it reads
// into two buffers of its own, each again only once the socket has taken its bytes; read any other way, it is
// an ordinary stream with a buffer per chunk. Either way: the exact bytes, the file handle closed at the end,
// on an error, and when the client goes away.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PassThrough, type Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { LocalReadStream } from '../src/platform/blob/local-read-stream.ts'

const MiB = 1024 * 1024
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** A stream over `file`, recording the buffers it reads into and whether its handle was closed. */
async function streamOf(file: string, start: number, end: number) {
  const handle = await open(file, 'r')
  const buffers = new Set<ArrayBufferLike>()
  const read = handle.read.bind(handle)
  handle.read = ((buffer: Buffer, ...rest: unknown[]) => {
    buffers.add(buffer.buffer)
    return (read as (...args: unknown[]) => unknown)(buffer, ...rest)
  }) as typeof handle.read
  let closed = false
  const close = handle.close.bind(handle)
  handle.close = async () => {
    closed = true
    return close()
  }
  return { stream: new LocalReadStream(handle, start, end), buffers, closed: () => closed }
}

/** Serves one response per request: `respond` pipes a stream into it. */
async function server(respond: (res: http.ServerResponse) => void) {
  const srv = http.createServer((_req, res) => respond(res))
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`,
    close: () => {
      srv.closeAllConnections()
      return new Promise((resolve) => srv.close(resolve))
    },
  }
}

/** GET `url`, reading slowly enough that the server's writes wait for the socket. */
async function slowGet(url: string, pauseEveryBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const chunks: Buffer[] = []
        let sincePause = 0
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          sincePause += chunk.length
          if (sincePause >= pauseEveryBytes) {
            sincePause = 0
            res.pause()
            setTimeout(() => res.resume(), 5)
          }
        })
        res.on('end', () => resolve(Buffer.concat(chunks)))
        res.on('error', reject)
      })
      .on('error', reject)
  })
}

async function readAll(stream: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000
  while (!condition()) {
    assert.ok(Date.now() < deadline, what)
    await sleep(10)
  }
}

describe('LocalReadStream', () => {
  let dir: string
  let file: string
  let content: Buffer
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-read-stream-'))
    file = path.join(dir, 'blob')
    // Larger than the socket buffers, so that writes really wait for a slow client.
    content = randomBytes(24 * MiB + 17)
    await writeFile(file, content)
  })
  after(() => rm(dir, { recursive: true, force: true }))

  test('piped into an HTTP response, a slow client gets every byte, read through two buffers', async () => {
    for (const [start, end] of [
      [0, content.length],
      [MiB + 3, 9 * MiB + 5],
      [content.length - 10, content.length],
    ] as const) {
      const opened = await streamOf(file, start, end)
      const srv = await server((res) => {
        res.writeHead(200, { 'content-length': end - start })
        opened.stream.pipe(res)
      })
      try {
        const got = await slowGet(srv.url, 4 * MiB)
        // A buffer read into again before the socket took its bytes would corrupt what the client got.
        assert.equal(got.length, end - start)
        assert.equal(sha(got), sha(content.subarray(start, end)), `bytes ${start}-${end}`)
        assert.ok(opened.buffers.size <= 2, `read into ${opened.buffers.size} buffers`)
        await until(opened.closed, 'the handle is closed once the stream ends')
      } finally {
        await srv.close()
      }
    }
  })

  test('read any other way, each chunk is a buffer of its own', async () => {
    const whole = await streamOf(file, 0, content.length)
    const chunks = await readAll(whole.stream)
    assert.equal(sha(Buffer.concat(chunks)), sha(content))
    assert.equal(new Set(chunks.map((chunk) => chunk.buffer)).size, chunks.length)
    assert.ok(chunks.length > 2)
    assert.ok(whole.closed())

    // A stream that keeps the chunks it is given (as a PassThrough does until read) must get its own.
    const range = await streamOf(file, 5 * MiB + 1, 8 * MiB)
    const kept = new PassThrough({ highWaterMark: 64 * MiB })
    range.stream.pipe(kept)
    await new Promise((resolve) => kept.once('finish', resolve))
    assert.equal(sha(Buffer.concat(await readAll(kept))), sha(content.subarray(5 * MiB + 1, 8 * MiB)))
    assert.ok(range.buffers.size > 2)
  })

  test('a client that goes away ends the stream and closes the file', async () => {
    const opened = await streamOf(file, 0, content.length)
    const srv = await server((res) => {
      res.writeHead(200, { 'content-length': content.length })
      opened.stream.pipe(res)
      // As Fastify does: the stream is destroyed when the response closes early.
      res.once('close', () => opened.stream.destroy())
    })
    try {
      await new Promise<void>((resolve, reject) => {
        const request = http.get(srv.url, (res) => {
          res.once('data', () => {
            request.destroy()
            resolve()
          })
        })
        request.on('error', (error) => (error.message === 'socket hang up' ? undefined : reject(error)))
      })
      await until(opened.closed, 'the handle is closed once the client is gone')
      assert.ok(opened.stream.destroyed)
    } finally {
      await srv.close()
    }
  })

  test('a file shorter than the stream expects is an error, and the file is closed', async () => {
    const short = path.join(dir, 'short')
    await writeFile(short, content.subarray(0, 3 * MiB))
    const read = await streamOf(short, 0, 4 * MiB)
    await assert.rejects(readAll(read.stream), /ended after 3145728 bytes, before the 4194304/)
    await until(read.closed, 'closed after the error')

    const piped = await streamOf(short, 0, 4 * MiB)
    const srv = await server((res) => {
      res.writeHead(200, { 'content-length': 4 * MiB })
      piped.stream.pipe(res)
      piped.stream.once('error', () => res.destroy())
    })
    try {
      await assert.rejects(slowGet(srv.url, Number.POSITIVE_INFINITY), /aborted|socket hang up|ECONNRESET/)
      await until(piped.closed, 'closed after the error')
    } finally {
      await srv.close()
    }
  })

  test('destroyed before it is read, it closes the file', async () => {
    const opened = await streamOf(file, 0, content.length)
    opened.stream.destroy()
    await until(opened.closed, 'closed at once')
    assert.equal(opened.buffers.size, 0)
  })
})
