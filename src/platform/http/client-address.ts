// Who the client is: the address every limit per client counts against, and every log and record names. Behind
// proxies that TRUST_PROXY names, it is the nearest address of X-Forwarded-For that is not a trusted proxy's
// (Fastify's trustProxy, through proxy-addr, walks the header from the nearest hop); a client can put anything
// in that header, but only its own address is added after it by the proxy in front.
import { isIP } from 'node:net'
import type { FastifyRequest } from 'fastify'
import type { TrustProxy } from '../config.ts'

/** Fastify's trustProxy for TRUST_PROXY: a number of hops becomes a test of the hop's distance. */
export function fastifyTrustProxy(
  trust: TrustProxy,
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust
  return (_address, hop) => hop < trust
}

/**
 * The client's address. What a trusted proxy passed on as the client but is no IP address (`not-an-address`, a
 * chain longer than the proxies configured) is not believed: the nearest peer's address stands for it.
 */
export function clientAddress(request: FastifyRequest): string {
  const { ip } = request
  if (isIP(ip) !== 0) return ip
  return request.socket?.remoteAddress ?? ip
}
