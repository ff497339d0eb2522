// The pages' forms and the authorization server's endpoints, fuzzed with fast-check (seeded, so a failure
// replays), as the API's operations are in fuzz.test.ts (issue 23): form bodies of real and made-up fields
// holding hostile text (control characters, lone surrogates, bidi controls, markup, very long values) or bytes
// that are not UTF-8, with the session's CSRF token, another one or none; OAuth requests of the same kind. No
// answer may be a 5xx; a page's answer is a page, the OAuth server's JSON. How many requests each surface got
// is printed.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { call, createFile, describeEachEngine } from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const RUNS = Number(process.env.FUZZ_RUNS ?? 25)
const SEED = 20261126

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '\u202Egnp.exe\u202C',
    '<script>alert(1)</script>',
    '"><img src=x onerror=alert(1)>',
    '../../etc/passwd',
    'x'.repeat(5000),
    '2026-13-45',
    '-1',
    '1e309',
    'true',
  ),
)

/** A form: some of the route's own fields and some made up, each once or repeated. */
const formOf = (fields: string[]) =>
  fc.array(
    fc.tuple(
      fields.length > 0
        ? fc.oneof(fc.constantFrom(...fields), fc.string({ maxLength: 12 }))
        : fc.string({ maxLength: 12 }),
      text,
    ),
    { maxLength: 8 },
  )

const encoded = (pairs: [string, string][]) => {
  const body = new URLSearchParams()
  for (const [name, value] of pairs) body.append(name, value)
  return body.toString()
}

describeEachEngine('fuzzed pages and OAuth endpoints', (ctx) => {
  test('no form of the pages, with or without its token, gets a 5xx or anything but a page', async () => {
    const { app } = ctx()
    const { id, email } = await newOwner(app)
    const web = await WebClient.signedIn(app, email)
    const { secret } = await app.services.apiKeys.create({
      accountId: id,
      name: 'fuzz',
      scopes: [...ALL_SCOPES],
    })
    const file = await createFile(ctx(), id, { name: 'fuzzed.txt', content: 'bytes' })
    const trashed = await createFile(ctx(), id, { name: 'trashed.txt', content: 'bytes' })
    await app.services.files.delete(id, trashed.id, { error: () => {} })
    const folder = (await call(app, 'POST', '/api/v1/folders', { token: secret, body: { name: 'Fuzz' } }))
      .body.data
    const request = (
      await call(app, 'POST', '/api/v1/requests', { token: secret, body: { title: 'Fuzz me' } })
    ).body.data
    const share = (
      await call(app, 'POST', '/api/v1/shares', {
        token: secret,
        body: { fileId: file.id, password: 'fuzzfuzz' },
      })
    ).body.data
    const folderLink = (
      await call(app, 'POST', '/api/v1/folder-shares', {
        token: secret,
        body: { folderId: folder.id, password: 'fuzzfuzz' },
      })
    ).body.data
    const token = await web.csrfToken('/folders/new')
    const forms: [string, string[]][] = [
      ['/account/sign-in', ['email', 'password', 'return_to']],
      ['/account/keys', ['name', 'scopes', 'expiresOn']],
      ['/account/password', ['current', 'password', 'confirm']],
      ['/folders', ['name']],
      [`/folders/${folder.id}/rename`, ['name']],
      ['/files/bulk', ['action', 'fileIds', 'folderId', 'return_to']],
      ['/files/zip', ['fileIds']],
      [`/files/${file.id}/rename`, ['name']],
      [`/files/${file.id}/move`, ['folderId']],
      [`/files/${file.id}/share`, []],
      [
        '/requests',
        ['title', 'description', 'folderId', 'deadline', 'maxFiles', 'maxFileSizeMb', 'allowedTypes'],
      ],
      [`/requests/${request.id}`, ['title', 'description', 'deadline', 'maxFiles']],
      [`/requests/${request.id}/move`, ['folderId']],
      ['/trash/restore', ['fileIds', 'return_to']],
      [`/trash/${trashed.id}/delete`, ['return_to']],
      ['/trash/empty', []],
      [new URL(share.publicUrl).pathname, ['password']],
      [new URL(folderLink.publicUrl).pathname, ['password']],
    ]
    let requests = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...forms),
        fc.constantFrom('good', 'other', 'none'),
        fc.boolean(),
        formOf(['_csrf']),
        async ([url, fields], csrf, notUtf8, extra) => {
          const pairs = fc.sample(formOf(fields), { numRuns: 1, seed: requests })[0] ?? []
          const withToken: [string, string][] =
            csrf === 'good'
              ? [...pairs, ['_csrf', token]]
              : csrf === 'other'
                ? [...pairs, ['_csrf', 'x']]
                : pairs
          let body: string | Buffer = encoded([...withToken, ...extra])
          if (notUtf8) body = Buffer.concat([Buffer.from(`${body}&name=`), Buffer.from([0xff, 0xc3, 0x28])])
          requests++
          const answer = await app.inject({
            method: 'POST',
            url,
            payload: body,
            headers: {
              accept: 'text/html',
              'content-type': 'application/x-www-form-urlencoded',
              cookie: [...web.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
            },
          })
          assert.ok(answer.statusCode < 500, `POST ${url}: ${answer.statusCode} ${answer.body.slice(0, 300)}`)
          if (answer.statusCode !== 303) {
            assert.match(String(answer.headers['content-type']), /^text\/html/, `POST ${url} answers a page`)
          }
        },
      ),
      { numRuns: RUNS * forms.length, seed: SEED },
    )
    console.log(`page forms: ${requests} requests over ${forms.length} forms, no 5xx`)
  })

  test('the authorization server answers whatever it is sent without a 5xx', async () => {
    const { app } = ctx()
    let requests = 0
    const endpoints = [
      {
        url: '/oauth/token',
        fields: [
          'grant_type',
          'code',
          'code_verifier',
          'client_id',
          'refresh_token',
          'redirect_uri',
          'resource',
          'device_code',
        ],
      },
      { url: '/oauth/revoke', fields: ['token', 'client_id', 'token_type_hint'] },
      { url: '/oauth/device/auth', fields: ['client_id', 'scope', 'resource'] },
      { url: '/oauth/device', fields: ['xsrf', 'user_code', 'confirm', 'abort'] },
    ]
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...endpoints), fc.integer(), async (endpoint, seed) => {
        const pairs = fc.sample(formOf(endpoint.fields), { numRuns: 1, seed })[0] ?? []
        requests++
        const res = await app.inject({
          method: 'POST',
          url: endpoint.url,
          payload: encoded(pairs),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          remoteAddress: `10.77.${(requests >> 8) & 255}.${requests & 255}`,
        })
        assert.ok(res.statusCode < 500, `POST ${endpoint.url}: ${res.statusCode} ${res.body.slice(0, 300)}`)
      }),
      { numRuns: RUNS * endpoints.length * 2, seed: SEED },
    )
    const metadata = fc.dictionary(
      fc.constantFrom(
        'client_name',
        'redirect_uris',
        'application_type',
        'grant_types',
        'token_endpoint_auth_method',
        'client_uri',
        'scope',
        'response_types',
      ),
      fc.oneof(text, fc.array(text, { maxLength: 3 }), fc.jsonValue({ maxDepth: 2 })),
    )
    await fc.assert(
      fc.asyncProperty(metadata, async (body) => {
        requests++
        const res = await app.inject({
          method: 'POST',
          url: '/oauth/register',
          payload: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
          remoteAddress: `10.78.${(requests >> 8) & 255}.${requests & 255}`,
        })
        assert.ok(res.statusCode < 500, `register: ${res.statusCode} ${res.body.slice(0, 300)}`)
        if (res.statusCode === 201) {
          assert.ok(!/\p{Cc}/u.test(String(res.json().client_name ?? '')), 'no control characters kept')
        }
      }),
      { numRuns: RUNS * 4, seed: SEED },
    )
    console.log(`authorization server: ${requests} requests, no 5xx`)
  })
})
