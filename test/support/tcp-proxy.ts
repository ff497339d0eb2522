// A TCP proxy on 127.0.0.1 in front of a server, for the tests of resumed uploads: it counts the bytes clients
// send through it (what a transfer re-sends is measured there), and can cut every connection once a number of
// bytes has gone through, then refuse new ones until healed (a network that went away mid-transfer).
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number
  /** Bytes the clients sent through the proxy since the last `reset` (requests' heads and bodies). */
  readonly sent: number
  /** Starts counting again from zero. */
  reset(): void
  /**
   * Cuts every connection once `bytes` more have gone from the clients through the proxy, and refuses the
   * connections made after, until `heal`. Resolves once it has cut.
   */
  cutAfter(bytes: number): Promise<void>
  /** Lets connections through again. */
  heal(): void
  /** Passes at most `bytesPerSecond` from the clients (all connections together); undefined: no limit. */
  throttle(bytesPerSecond: number | undefined): void
  close(): Promise<void>
}

export async function startTcpProxy(targetPort: number, port = 0): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let sent = 0
  let down = false
  let cut: { at: number; resolve: () => void } | undefined
  let limit: { rate: number; since: number; sent: number } | undefined
  /** How long to hold a client back, after `bytes` more went, for the limit. */
  const holdFor = (bytes: number) => {
    if (!limit) return 0
    limit.sent += bytes
    return Math.max(0, (limit.sent / limit.rate) * 1000 - (Date.now() - limit.since))
  }
  const cutNow = () => {
    down = true
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    cut?.resolve()
    cut = undefined
  }
  const server: Server = createServer((client) => {
    if (down) {
      client.destroy()
      return
    }
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    sockets.add(client)
    sockets.add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('data', (chunk: Buffer) => {
      if (down) return
      let forward = chunk
      if (cut && sent + chunk.length >= cut.at) forward = chunk.subarray(0, Math.max(0, cut.at - sent))
      sent += forward.length
      if (forward.length > 0 && !upstream.write(forward)) {
        client.pause()
        upstream.once('drain', () => client.resume())
      }
      if (forward !== chunk) cutNow()
      const hold = holdFor(forward.length)
      if (hold > 0) {
        client.pause()
        setTimeout(() => client.resume(), hold)
      }
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!client.write(chunk)) {
        upstream.pause()
        client.once('drain', () => upstream.resume())
      }
    })
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
    client.on('error', drop)
    upstream.on('error', drop)
    client.on('close', drop)
    upstream.on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    get sent() {
      return sent
    },
    reset() {
      sent = 0
    },
    cutAfter(bytes) {
      return new Promise((resolve) => {
        cut = { at: sent + bytes, resolve }
      })
    },
    heal() {
      down = false
    },
    throttle(bytesPerSecond) {
      limit = bytesPerSecond ? { rate: bytesPerSecond, since: Date.now(), sent: 0 } : undefined
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
