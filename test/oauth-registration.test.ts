// What a client may register (issue 23, item 6): a web client's redirects are https (a loopback address
// excepted), no redirect carries a user name or password, and every registered text follows the API's text
// rules and a length; names are shown without the characters that reorder or hide text.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { displayedClientText } from '../src/resources/oauth/client-metadata.ts'
import { confirmCodePage } from '../src/resources/oauth/oauth-pages.views.ts'
import { ENGINES, startApp } from './support/harness.ts'

type Started = Awaited<ReturnType<typeof startApp>>

const NATIVE = 'http://127.0.0.1/callback'

test('a name is shown without what hides or reorders text, isolated from the text around it', () => {
  assert.equal(displayedClientText('Coffer \u202Egnp.exe\u202C Official'), 'Coffer gnp.exe Official')
  assert.equal(displayedClientText('Co\u200Bffer\u2066 \u2069\uFEFF'), 'Coffer ')
  assert.equal(
    displayedClientText('C\u00ADo\u034Ff\u180Ef\u206Ae\uFFF9r\u{E0041}\u3164\u2028\u2029\u{1D173}!'),
    'Coffer!',
  )
  assert.equal(displayedClientText('مرحبا Coffer ❤\uFE0F'), 'مرحبا Coffer ❤\uFE0F')
  const page = confirmCodePage({
    action: '/oauth/device',
    xsrf: 'x',
    clientName: 'Tool',
    userCode: 'ABCD-EFGH',
  })
  assert.match(page.main, /<strong><bdi>Tool<\/bdi><\/strong>/)
})

for (const engine of ENGINES) {
  describe(`client registration [${engine}]`, () => {
    let c: Started
    before(async () => {
      c = await startApp(engine)
    })
    after(async () => {
      await c?.stop()
    })

    // Each from an address of its own: registrations, refused ones too, are limited to 20 an hour per address.
    let registrations = 0
    const register = (metadata: Record<string, unknown> | Buffer) =>
      c.app.inject({
        method: 'POST',
        url: '/oauth/register',
        remoteAddress: `10.60.${++registrations >> 8}.${registrations & 255}`,
        headers: { 'content-type': 'application/json' },
        payload: Buffer.isBuffer(metadata)
          ? metadata
          : JSON.stringify({ token_endpoint_auth_method: 'none', ...metadata }),
      })

    test('the endpoints it names, and where it registers clients, are under PUBLIC_URL, whatever Host says', async () => {
      // A proxy may pass on a Host without the port (nginx's $host), or a client may send any Host at all.
      for (const host of ['coffer.test', 'coffer.test:8443', 'elsewhere.example']) {
        const response = await c.app.inject({
          method: 'GET',
          url: '/.well-known/oauth-authorization-server',
          headers: { host },
        })
        assert.equal(response.statusCode, 200)
        const metadata = response.json()
        assert.equal(metadata.issuer, 'http://coffer.test')
        for (const endpoint of ['authorization', 'token', 'registration', 'device_authorization']) {
          assert.ok(
            metadata[`${endpoint}_endpoint`].startsWith('http://coffer.test/oauth/'),
            `${host}: ${endpoint}`,
          )
        }
        const registered = await c.app.inject({
          method: 'POST',
          url: '/oauth/register',
          headers: { host, 'content-type': 'application/json' },
          payload: JSON.stringify({ token_endpoint_auth_method: 'none', redirect_uris: [NATIVE] }),
        })
        assert.equal(registered.statusCode, 201, registered.body)
        assert.match(
          registered.json().registration_client_uri ?? 'http://coffer.test/',
          /^http:\/\/coffer\.test\//,
        )
      }
    })

    test('a web client redirects over https, or http to a loopback address; never with userinfo', async () => {
      for (const uri of [
        'https://app.example/cb',
        'http://127.0.0.1:8000/cb',
        'http://localhost/cb',
        'http://[::1]/cb',
      ]) {
        const res = await register({ client_name: 'Web app', redirect_uris: [uri] })
        assert.equal(res.statusCode, 201, `${uri}: ${res.body}`)
      }
      for (const [uri, type] of [
        ['http://app.example/cb', 'web'],
        ['https://localhost@evil.example/cb', 'web'],
        ['https://user:pass@app.example/cb', 'web'],
        ['http://user@127.0.0.1/cb', 'native'],
      ] as const) {
        const res = await register({ client_name: 'Web app', redirect_uris: [uri], application_type: type })
        assert.equal(res.statusCode, 400, `${uri}: ${res.body}`)
        assert.equal(res.json().error, 'invalid_redirect_uri', uri)
      }
    })

    test('registered texts: at most their length, well-formed text, nothing that hides or reorders text', async () => {
      const native = { application_type: 'native', redirect_uris: [NATIVE] }
      assert.equal((await register({ ...native, client_name: 'n'.repeat(100) })).statusCode, 201)
      assert.equal((await register({ ...native, client_name: 'مرحبا Coffer ❤\uFE0F' })).statusCode, 201)
      const invisible = [
        '\u202E',
        '\u00AD',
        '\u034F',
        '\u180E',
        '\u206A',
        '\uFFF9',
        '\u{E0041}',
        '\u{E007F}',
        '\u3164',
        '\u115F',
        '\u2028',
        '\u2029',
        '\u{1D173}',
        '\u200B',
        '\uFEFF',
      ]
      for (const character of invisible) {
        for (const key of ['client_name', 'client_uri', 'policy_uri', 'tos_uri', 'logo_uri']) {
          const value = key === 'client_name' ? `Coffer${character}` : `https://app.example/${character}`
          const res = await register({ ...native, client_name: 'ok', [key]: value })
          assert.equal(
            res.statusCode,
            400,
            `${key} with U+${character.codePointAt(0)?.toString(16)}: ${res.body}`,
          )
          assert.match(res.json().error_description, /must not hold characters that show nothing/)
        }
      }
      for (const [what, metadata] of [
        ['a long name', { client_name: 'n'.repeat(10_000) }],
        ['U+0000', { client_name: 'Co\u0000ffer' }],
        ['a control character', { client_name: 'Co\u001bffer' }],
        ['a lone surrogate', { client_name: 'Co\ud800ffer' }],
        ['a long client_uri', { client_name: 'ok', client_uri: `https://app.example/${'a'.repeat(2001)}` }],
      ] as const) {
        const res = await register({ ...native, ...metadata })
        assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
        assert.equal(res.json().error, 'invalid_client_metadata', what)
      }
      const notUtf8 = Buffer.concat([
        Buffer.from(
          `{"token_endpoint_auth_method":"none","application_type":"native","redirect_uris":["${NATIVE}"],"client_name":"Co`,
        ),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('ffer"}'),
      ])
      const res = await register(notUtf8)
      assert.equal(res.statusCode, 400, `bytes that are not UTF-8: ${res.body}`)
    })
  })
}
