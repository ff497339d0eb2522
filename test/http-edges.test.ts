// The edges of HTTP input that no single resource owns: text the databases cannot store, query values that
// only look like numbers, URLs the router refuses, requests Node's parser refuses, compressed bodies, and the
// secrets a client may put where they do not belong.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { test } from 'node:test'
import { loadConfig } from '../src/platform/config.ts'
import { clientAddress } from '../src/platform/http/client-address.ts'
import {
  assertError,
  call,
  captureLogs,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  startApp,
} from './support/harness.ts'

describeEachEngine('text the databases cannot store', (ctx) => {
  test('U+0000 anywhere in a path, query or body is a 400 naming the field, never a 500', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const cases: [string, string, unknown, RegExp][] = [
      ['GET', '/api/v1/files/%00', undefined, /path parameter "fileId"/],
      ['GET', '/api/v1/folders/a%00b', undefined, /path parameter "folderId"/],
      ['GET', '/api/v1/files?query=abc%00', undefined, /query parameter "query"/],
      ['GET', '/api/v1/files?folderId=%00', undefined, /query parameter "folderId"/],
      ['GET', '/api/v1/analytics?shareId=%00', undefined, /query parameter "shareId"/],
      ['POST', '/api/v1/folders', { name: 'a\u0000b' }, /request body "name"/],
      ['DELETE', '/api/v1/files', { fileIds: ['fil_1', '\u0000'] }, /request body "fileIds\[1\]"/],
      ['POST', '/api/v1/requests', { title: 'abc\u0000' }, /request body "title"/],
    ]
    for (const [method, url, body, field] of cases) {
      const message = assertError(
        await call(app, method, url, { token: a.token, body }),
        400,
        'invalid_request',
      )
      assert.match(message, field, url)
      assert.match(message, /U\+0000/, url)
    }
    // Nothing was written.
    assert.deepEqual((await call(app, 'GET', '/api/v1/folders', { token: a.token })).body.data, [])
  })

  test('an unpaired surrogate in a body is a 400: it could only be stored as U+FFFD', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const res = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      rawBody: '{"name":"half \\ud800 a pair"}',
      headers: { 'content-type': 'application/json' },
    })
    assert.match(assertError(res, 400, 'invalid_request'), /"name" must be valid Unicode text/)
    // A whole pair is a character like any other.
    const ok = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      rawBody: '{"name":"whole \\ud83d\\ude00 pair"}',
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(ok.status, 201)
    assert.equal(ok.body.data.name, 'whole 😀 pair')
  })

  test('bytes that are not UTF-8, in a query or a body, are a 400; none is stored as U+FFFD or echoed', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    for (const url of [
      '/api/v1/files?query=%FF',
      '/api/v1/files?query=%ED%A0%80',
      '/api/v1/files?folderId=%ED%A0%80',
      '/api/v1/files?query=ok&query2=%C0%AF',
    ]) {
      const res = await call(app, 'GET', url, { token: a.token })
      const message = assertError(res, 400, 'invalid_request')
      if (url.includes('query2')) assert.match(message, /Unknown query parameter/)
      else assert.match(message, /must be valid Unicode text in UTF-8/, url)
      assert.doesNotMatch(JSON.stringify(res.body), /%ED|%FF|\uFFFD/u, url)
    }
    // Well-formed percent-encoding is text like any other.
    const fine = await call(app, 'GET', `/api/v1/files?query=${encodeURIComponent('é 😀+')}`, {
      token: a.token,
    })
    assert.equal(fine.status, 200)

    const raw = await app.inject({
      method: 'POST',
      url: '/api/v1/folders',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      payload: Buffer.concat([
        Buffer.from('{"name":"bad '),
        Buffer.from([0xff, 0xfe, 0xc0, 0xaf]),
        Buffer.from('"}'),
      ]),
    })
    assert.equal(raw.statusCode, 400)
    assert.match(JSON.parse(raw.body).error.message, /not valid UTF-8/)
    assert.deepEqual((await call(app, 'GET', '/api/v1/folders', { token: a.token })).body.data, [])
  })

  test('a name blank once trimmed is refused wherever a name enters', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const file = await createFile(ctx(), a.id)
    for (const name of ['   ', '\t\n', '\u3000', '\u00a0\u2003']) {
      const upload = await call(app, 'POST', '/api/v1/files', {
        token: a.token,
        body: {
          files: [
            { name: 'ok.txt', type: 'text/plain', size: 1 },
            { name, type: 'text/plain', size: 1 },
          ],
        },
      })
      assert.match(assertError(upload, 400, 'invalid_request'), /"files\[1\]\.name" must not be blank/)
      assert.equal(upload.body.error.field, 'files[1].name')
      const rename = await call(app, 'PATCH', `/api/v1/files/${file.id}`, { token: a.token, body: { name } })
      assert.match(assertError(rename, 400, 'invalid_request'), /"name" must not be blank/)
      const folder = await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name } })
      assert.match(assertError(folder, 400, 'invalid_request'), /"name" must not be blank/)
    }
    const intents = await ctx().db.kysely.selectFrom('upload_intents').select('id').execute()
    assert.deepEqual(intents, [])
  })
})

describeEachEngine('query values', (ctx) => {
  test('an integer parameter takes decimal digits only, and any parameter once', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    for (const limit of ['0x10', '1e1', '+5', '5.0', ' 5', '']) {
      const res = await call(app, 'GET', `/api/v1/files?limit=${encodeURIComponent(limit)}`, {
        token: a.token,
      })
      assert.match(assertError(res, 400, 'invalid_request'), /"limit" must be an integer/, limit)
    }
    const twice = await call(app, 'GET', '/api/v1/files?limit=1&limit=2', { token: a.token })
    assert.match(assertError(twice, 400, 'invalid_request'), /query parameter "limit" must be given once/)
    assert.equal((await call(app, 'GET', '/api/v1/files?limit=007', { token: a.token })).status, 200)
  })

  test('operations without query parameters refuse unknown ones too; the public index ignores them', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    for (const url of [
      `/api/v1/files/${file.id}?fields=name`,
      '/api/v1/folders/fld_x?x=1',
      '/api/v1/shares/shr_x?x=',
    ]) {
      const res = await call(c.app, 'GET', url, { token: a.token })
      assert.match(assertError(res, 400, 'invalid_request'), /Unknown query parameter "(fields|x)"/, url)
    }
    assert.equal((await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })).status, 200)
    assert.equal((await call(c.app, 'GET', '/api/v1/?cachebust=1')).status, 200)
  })
})

describeEachEngine('requests refused before routing', (ctx) => {
  test('a path that is not UTF-8 once decoded, or a parameter past the router bound, is a 400 envelope', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    for (const url of ['/api/v1/files/%E0%A4%A', '/api/v1/shares/%ZZ', '/api/v1/folders/%C0%AF']) {
      const res = await call(app, 'GET', url, { token: a.token })
      assert.match(assertError(res, 400, 'invalid_request'), /not UTF-8 text/, url)
      assert.doesNotMatch(res.raw.body, /%E0|%ZZ|%C0/, 'the path is not echoed')
    }
    const long = await call(app, 'GET', `/api/v1/files/${chars(1001)}`, { token: a.token })
    assert.match(assertError(long, 400, 'invalid_request'), /longer than 1000 characters/)
  })

  test('a compressed body is a 415, an oversized one a 413 that names the bound', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const gzip = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      body: { name: 'x' },
      headers: { 'content-encoding': 'gzip' },
    })
    assert.match(assertError(gzip, 415, 'unsupported_media_type'), /Content-Encoding/)
    const identity = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      body: { name: 'plain' },
      headers: { 'content-encoding': 'identity' },
    })
    assert.equal(identity.status, 201)
    const large = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      rawBody: JSON.stringify({ name: chars(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    })
    assert.match(assertError(large, 413, 'payload_too_large'), /larger than 1 MiB/)
    // The blob endpoint stores bytes as sent; a request without its token is refused in its own protocol.
    const blob = await app.inject({
      method: 'PUT',
      url: '/blob/?pathname=a.txt',
      headers: { 'content-encoding': 'gzip', 'content-type': 'text/plain' },
      payload: 'bytes',
    })
    assert.ok(blob.statusCode >= 400 && blob.statusCode < 500, `${blob.statusCode} ${blob.body}`)
    assert.notEqual(JSON.parse(blob.body).error.code, 'unsupported_media_type')
    const text = await call(app, 'POST', '/api/v1/folders', {
      token: a.token,
      rawBody: 'name=x',
      headers: { 'content-type': 'text/plain' },
    })
    assert.match(assertError(text, 415, 'unsupported_media_type'), /must be application\/json/)
  })

  test('Node-level refusals (bad framing, headers over 16 KiB) are answered in the envelope', async () => {
    const { app } = ctx()
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const port = Number(new URL(address).port)
    /** Sends `request` as is; the answer's head and body, as text. */
    const rawText = async (request: string) => {
      const socket = connect(port, '127.0.0.1')
      await once(socket, 'connect')
      socket.end(request)
      let text = ''
      socket.setEncoding('utf8')
      for await (const chunk of socket) text += chunk
      const [head = '', body = ''] = text.split('\r\n\r\n')
      return { head, body }
    }
    const raw = async (request: string) => {
      const { head, body } = await rawText(request)
      return { status: Number(head.split(' ')[1]), head, body: JSON.parse(body) }
    }
    const badHeader = await raw('GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n')
    assert.equal(badHeader.status, 400)
    assert.equal(badHeader.body.error.code, 'invalid_request')
    assert.match(badHeader.head, /content-type: application\/json/i)
    const huge = await raw(`GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: ${chars(20_000)}\r\n\r\n`)
    assert.equal(huge.status, 431)
    assert.equal(huge.body.error.code, 'headers_too_large')
    for (const { body } of [badHeader, huge]) {
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'hint', 'message'])
    }

    // HEAD is answered with the headers alone: a body would be read as the start of the next response.
    for (const request of [
      `HEAD /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: ${chars(20_000)}\r\n\r\n`,
      'HEAD /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n',
    ]) {
      const { head, body } = await rawText(request)
      assert.match(head, /^HTTP\/1\.1 4\d\d /)
      assert.match(head, /content-length: \d+/i)
      assert.equal(body, '', 'no body after the headers')
    }
  })
})

describeEachEngine('bearer challenges', (ctx) => {
  test('no credential is challenged without an error code (RFC 6750 §3.1); a bad one with invalid_token', async () => {
    const { app } = ctx()
    const missing = await call(app, 'GET', '/api/v1/files')
    assertError(missing, 401, 'unauthorized')
    // Every challenge points to the API's protected resource metadata (RFC 9728 §5.1).
    const challenge =
      'Bearer realm="coffer", resource_metadata="http://coffer.test/.well-known/oauth-protected-resource/api/v1"'
    assert.equal(missing.headers['www-authenticate'], challenge)
    for (const authorization of ['Bearer coffer_unknown', 'Bearer not-an-oauth-token', 'Basic abc']) {
      const bad = await call(app, 'GET', '/api/v1/files', { headers: { authorization } })
      assertError(bad, 401, 'unauthorized')
      assert.equal(bad.headers['www-authenticate'], `${challenge}, error="invalid_token"`)
    }
  })
})

test('a credential in a URL is redacted from the request log', async () => {
  const logs = captureLogs('info')
  const c = await startApp('sqlite', { logger: logs.logger })
  try {
    const a = await createAccount(c.app)
    const grant = `coffer_grant_${chars(43, 'g')}`
    await call(c.app, 'GET', `/api/v1/files?api_key=${a.token}&limit=5`)
    await call(c.app, 'GET', `/api/v1/files/uploads/x?grant=${grant}`, { token: a.token })
    // A secret of another shape, in a parameter whose name says what it is: a METRICS_TOKEN, an OAuth token.
    const metricsToken = chars(40, 'm')
    await call(c.app, 'GET', `/metrics?token=${metricsToken}`)
    await call(c.app, 'GET', `/api/v1/files?access_token=${metricsToken}&limit=5`)
    const text = logs.text()
    assert.ok(!text.includes(metricsToken), 'the token is not logged')
    assert.ok(!text.includes(a.token), 'the key is not logged')
    assert.ok(!text.includes(grant), 'the grant is not logged')
    const urls = logs
      .lines()
      .filter((line) => line.req)
      .map((line) => line.req.url)
    assert.deepEqual(urls, [
      '/api/v1/files?api_key=[redacted]&limit=5',
      '/api/v1/files/uploads/x?grant=coffer_[redacted]',
      '/metrics?token=[redacted]',
      '/api/v1/files?access_token=[redacted]&limit=5',
    ])
  } finally {
    await c.stop()
  }
})

test('TRUST_PROXY: none, a number of hops (true is one), or proxy addresses and ranges; nothing else starts', () => {
  assert.equal(loadConfig({}).trustProxy, false)
  assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false)
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, 1)
  assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2)
  assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,loopback' }).trustProxy, [
    '127.0.0.1',
    '10.0.0.0/8',
    '::1',
    'loopback',
  ])
  for (const bad of ['yes', '0', '11', '10.0.0.0/33', 'proxy.internal', '127.0.0.1,']) {
    assert.throws(() => loadConfig({ TRUST_PROXY: bad }), /TRUST_PROXY must/, bad)
  }
})

test('the client is the nearest address a trusted proxy did not add, and always an IP address', async () => {
  const cases: [Record<string, string>, string | undefined, string, string][] = [
    // [settings, X-Forwarded-For, the peer, the client]
    [{}, '6.6.6.6', '127.0.0.1', '127.0.0.1'],
    [{ TRUST_PROXY: 'true' }, '6.6.6.6, 203.0.113.9', '127.0.0.1', '203.0.113.9'],
    [{ TRUST_PROXY: 'true' }, undefined, '127.0.0.1', '127.0.0.1'],
    [{ TRUST_PROXY: '2' }, '6.6.6.6, 203.0.113.9', '127.0.0.1', '6.6.6.6'],
    [{ TRUST_PROXY: '127.0.0.1,10.0.0.0/8' }, '6.6.6.6, 198.51.100.7, 10.1.2.3', '127.0.0.1', '198.51.100.7'],
    [{ TRUST_PROXY: '10.0.0.0/8' }, '6.6.6.6', '127.0.0.1', '127.0.0.1'],
    // What a trusted proxy passed on that is no address is not believed.
    [{ TRUST_PROXY: 'true' }, 'not-an-address <b>x</b>', '127.0.0.1', '127.0.0.1'],
    [{ TRUST_PROXY: '2' }, 'x, 203.0.113.9', '127.0.0.1', '127.0.0.1'],
  ]
  for (const [env, forwardedFor, peer, client] of cases) {
    const c = await startApp('sqlite', { env, deferReady: true })
    try {
      c.app.get('/test/client', async (request) => ({ client: clientAddress(request) }))
      await c.app.ready()
      const answer = await c.app.inject({
        url: '/test/client',
        remoteAddress: peer,
        headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
      })
      assert.equal(answer.json().client, client, `${JSON.stringify(env)} ${forwardedFor}`)
    } finally {
      await c.stop()
    }
  }
})
