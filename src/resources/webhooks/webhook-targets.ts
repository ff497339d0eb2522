// Where a webhook may be sent. An endpoint is an `https://` URL whose host resolves only to public addresses;
// with WEBHOOKS_ALLOW_PRIVATE=true (tests, a LAN), also loopback and private ones, and then over `http://` too.
// Link-local addresses (cloud metadata services answer at 169.254.169.254) and other special ranges are never
// allowed. The address is checked when the endpoint is saved and again at each delivery, by the lookup the
// connection itself uses, so a name that changes its answer between the two (DNS rebinding) gains nothing.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

export const MAX_URL_LENGTH = 2048

/** Ranges allowed only with WEBHOOKS_ALLOW_PRIVATE=true. */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat'])

export class TargetRefused extends Error {}

/**
 * An IPv6 address of ::/96 that is not :: or ::1: the deprecated IPv4-compatible form (RFC 4291 section 2.5.5.1),
 * `::127.0.0.1` spelt `::7f00:1`, which ipaddr.js calls unicast. Its embedded IPv4 address is what it names.
 */
function ipv4Compatible(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() !== 'ipv6') return false
  const parts = (address as ipaddr.IPv6).parts
  return parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || (parts[7] ?? 0) > 1)
}

/**
 * Why `address` may not receive webhooks, or undefined when it may: only global unicast addresses, in IPv4 and
 * IPv6 and every form that embeds one in the other (mapped, compatible, NAT64, 6to4, Teredo), which are never
 * taken as unicast.
 */
export function refusalOf(address: string, allowPrivate: boolean): string | undefined {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address`
  const parsed = ipaddr.process(address)
  if (ipv4Compatible(parsed))
    return `${address} is an IPv4-compatible IPv6 address, which never receives webhooks`
  const range = parsed.range()
  if (range === 'unicast') return undefined
  if (allowPrivate && PRIVATE_RANGES.has(range)) return undefined
  return PRIVATE_RANGES.has(range)
    ? `${address} is a ${range} address; webhooks go to public addresses unless WEBHOOKS_ALLOW_PRIVATE=true`
    : `${address} is a ${range} address, which never receives webhooks`
}

/**
 * The URL an endpoint may have, or a TargetRefused saying why not: https (http only to an allowed private
 * address), no credentials in it, and a host that resolves only to allowed addresses.
 */
export async function checkTarget(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new TargetRefused('It is not an absolute URL.')
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate)) {
    throw new TargetRefused(
      allowPrivate ? 'It must be an https:// or http:// URL.' : 'It must be an https:// URL.',
    )
  }
  if (url.username !== '' || url.password !== '') {
    throw new TargetRefused('It must not carry a user name or password; authenticate by the signature.')
  }
  const addresses = await resolve(hostOf(url))
  for (const { address } of addresses) {
    const refusal = refusalOf(address, allowPrivate)
    if (refusal) throw new TargetRefused(`Its host resolves to ${refusal}.`)
  }
  if (url.protocol === 'http:' && addresses.some(({ address }) => refusalOf(address, false) === undefined)) {
    throw new TargetRefused('A public address must be reached over https://.')
  }
  return url
}

/** The host of `url` as a resolver takes it (an IPv6 literal without its brackets). */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

function resolve(host: string): Promise<LookupAddress[]> {
  return new Promise((done, fail) =>
    dnsLookup(host, { all: true }, (error, addresses) => {
      if (error)
        fail(new TargetRefused(`Its host "${host}" does not resolve (${error.code ?? error.message}).`))
      else done(addresses)
    }),
  )
}

/**
 * The `lookup` of a delivery's connection: the name's addresses as the system resolves them, refused (so the
 * connection fails) if any is not allowed.
 */
export function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0)
      for (const { address } of addresses) {
        const refusal = refusalOf(address, allowPrivate)
        if (refusal) return callback(new TargetRefused(`The host resolves to ${refusal}.`), '', 0)
      }
      const chosen = addresses[0]
      if (!chosen) return callback(new TargetRefused('The host resolves to no address.'), '', 0)
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses)
      return callback(null, chosen.address, chosen.family)
    })
  }
}
