// HTTP requests from a chosen local address (any of 127.0.0.0/8 on Linux), so that a test can be many clients,
// each with an address of its own, as a proxy in front of Coffer sees them: a client cannot name its own address
// to Coffer (X-Forwarded-For is the proxy's to set), it can only come from one.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'

export interface AnswerFrom {
  status: number
  headers: IncomingHttpHeaders
  text: string
}

/** `method url` from the local address `from`, on a connection of its own; the whole answer, as text. */
export function requestFrom(
  from: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<AnswerFrom> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: init.method ?? 'GET', headers: init.headers, localAddress: from, agent: false },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        )
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(init.body)
  })
}
