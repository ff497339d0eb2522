// The MCP server at /mcp (streamable HTTP) as agents meet it, against a real server on both engines, with the
// official SDK's client: with an API key; and with an OAuth token for /mcp that the SDK's own auth gets by the
// whole flow (the 401 and its resource metadata, the authorization server's metadata, dynamic registration,
// PKCE, the resource parameter), the consent given in Chromium. A token for /mcp is refused by the API and a
// token for the API by /mcp; a tool without its scope is refused as the API refuses it.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { Browser, Page } from 'playwright-core'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { browserMissing, launchBrowser, newContext } from './support/browser.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import {
  apiStatus,
  authorizationUrl,
  consent,
  exchange,
  followInBrowser,
  REDIRECT_URI,
  register,
  signInIfAsked,
} from './support/oauth.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const PASSWORD = 'correct horse battery staple'

/** An MCP host's OAuth state, in memory: what the SDK's client asks of its host. */
class HostAuth implements OAuthClientProvider {
  authorizationUrl: URL | undefined
  #client: OAuthClientInformationMixed | undefined
  #tokens: OAuthTokens | undefined
  #verifier = ''

  get redirectUrl() {
    return REDIRECT_URI
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP test host',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
  clientInformation() {
    return this.#client
  }
  saveClientInformation(client: OAuthClientInformationMixed) {
    this.#client = client
  }
  tokens() {
    return this.#tokens
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier
  }
  codeVerifier() {
    return this.#verifier
  }
}

async function mcpWithKey(base: string, key: string): Promise<Client> {
  const client = new Client({ name: 'coffer-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  )
  return client
}

const text = (result: CallToolResult) => (result.content[0] as { text: string }).text

for (const engine of ENGINES) {
  describe(`MCP over HTTP at /mcp [${engine}]`, () => {
    let ctx: ListeningContext
    before(async () => {
      ctx = await startListening(engine)
    })
    after(async () => {
      await ctx?.stop()
    })

    test('with an API key: the tools, each doing what its API operation does, scopes included', async () => {
      const account = await createAccount(ctx.app)
      const client = await mcpWithKey(ctx.base, account.token)
      try {
        const { tools } = await client.listTools()
        assert.equal(tools.length, 23)
        const folder = (await client.callTool({
          name: 'create_folder',
          arguments: { name: 'Agents' },
        })) as CallToolResult
        const folderId = (folder.structuredContent as { id: string }).id
        const uploaded = (await client.callTool({
          name: 'upload_file',
          arguments: { name: 'plan.txt', content: 'step one', folderId },
        })) as CallToolResult
        assert.ok(!uploaded.isError, text(uploaded))
        const fileId = (uploaded.structuredContent as { id: string }).id
        const found = (await client.callTool({
          name: 'search_files',
          arguments: { query: 'PLAN' },
        })) as CallToolResult
        assert.deepEqual(
          (found.structuredContent as { data: { id: string }[] }).data.map((f) => f.id),
          [fileId],
        )
        const read = (await client.callTool({
          name: 'read_file',
          arguments: { fileId, maxBytes: 4 },
        })) as CallToolResult
        assert.equal((read.structuredContent as { text: string }).text, 'step')
        const resource = await client.readResource({ uri: `coffer://files/${fileId}` })
        assert.equal((resource.contents[0] as { text: string }).text, 'step one')
      } finally {
        await client.close()
      }

      const reader = await mcpWithKey(ctx.base, await account.key(['files:read']))
      try {
        const refused = (await reader.callTool({
          name: 'create_folder',
          arguments: { name: 'No' },
        })) as CallToolResult
        assert.ok(refused.isError)
        assert.match(text(refused), /^insufficient_scope: /)
        assert.ok(!((await reader.callTool({ name: 'list_files', arguments: {} })) as CallToolResult).isError)
      } finally {
        await reader.close()
      }
    })

    test('large messages are served a few at a time: two per credential, the rest told to come back', async () => {
      const account = await createAccount(ctx.app)
      const content = Buffer.alloc(8 * 1024 * 1024, 7).toString('base64')
      /** One upload_file call, as an agent's SDK sends it: a JSON-RPC message of about 11 MiB. */
      const upload = (i: number) =>
        fetch(`${ctx.base}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${account.token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'tools/call',
            params: { name: 'upload_file', arguments: { name: `big-${i}.bin`, content, encoding: 'base64' } },
          }),
        })
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => upload(i)))
      const statuses = answers.map((answer) => answer.status)
      assert.ok(
        statuses.every((status) => status === 200 || status === 429),
        `${statuses}`,
      )
      assert.ok(statuses.filter((status) => status === 200).length >= 2, `${statuses}`)
      const refused = answers.filter((answer) => answer.status === 429)
      assert.ok(refused.length >= 1, `${statuses}`)
      for (const answer of refused) {
        assert.equal(answer.headers.get('retry-after'), '5')
        const body = await answer.json()
        assert.match(body.error.message, /a credential may send 2 at a time/)
      }
      for (const answer of answers.filter((a) => a.status === 200)) {
        const body = await answer.json()
        assert.match(body.result.content[0].text, /^Uploaded big-\d\.bin/)
      }
      // Sent again once the others are done, it goes through.
      assert.equal((await upload(9)).status, 200)
    })

    test('without a credential: 401 pointing to the resource metadata of /mcp', async () => {
      const response = await fetch(`${ctx.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      assert.equal(response.status, 401)
      const metadataUrl = `${ctx.base}/.well-known/oauth-protected-resource/mcp`
      assert.match(
        String(response.headers.get('www-authenticate')),
        new RegExp(`resource_metadata="${metadataUrl}"`),
      )
      const metadata = await (await fetch(metadataUrl)).json()
      assert.deepEqual(
        [metadata.resource, metadata.authorization_servers, metadata.scopes_supported],
        [`${ctx.base}/mcp`, [new URL(ctx.base).origin], ALL_SCOPES],
      )
      assert.equal((await fetch(`${ctx.base}/mcp`)).status, 401, 'GET needs a credential too')
    })

    test('OAuth by the SDK’s own flow: a token for /mcp works there only, and the API’s token not there', {
      skip: browserMissing,
    }, async () => {
      const email = `mcp-${engine}@example.com`
      await ctx.app.services.accounts.create({ email, password: PASSWORD })
      let browser: Browser | undefined
      try {
        browser = await launchBrowser()
        const page: Page = await (await newContext(browser)).newPage()
        const host = new HostAuth()
        const first = new StreamableHTTPClientTransport(new URL(`${ctx.base}/mcp`), { authProvider: host })
        await assert.rejects(new Client({ name: 'host', version: '1' }).connect(first), UnauthorizedError)
        const authorization = host.authorizationUrl
        assert.ok(authorization, 'the SDK sends the user to authorize')
        assert.equal(authorization.searchParams.get('resource'), `${ctx.base}/mcp`)
        assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256')
        const back = await followInBrowser(page, authorization, async (p) => {
          await signInIfAsked(p, email, PASSWORD)
          await consent(p, ['files:read', 'folders:read'])
        })
        await first.finishAuth(String(back.searchParams.get('code')))
        const token = host.tokens()?.access_token as string
        assert.ok(token)

        const client = new Client({ name: 'host', version: '1' })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${ctx.base}/mcp`), { authProvider: host }),
        )
        try {
          const listed = (await client.callTool({ name: 'list_folders', arguments: {} })) as CallToolResult
          assert.ok(!listed.isError, text(listed))
          const refused = (await client.callTool({
            name: 'create_folder',
            arguments: { name: 'X' },
          })) as CallToolResult
          assert.match(text(refused), /^insufficient_scope: /, 'the scopes granted, not more')
        } finally {
          await client.close()
        }
        assert.equal(await apiStatus(ctx.base, token), 401, 'a token for /mcp is not for the API')

        const oc = await register(ctx.base, { client_name: 'API client' })
        const apiAuthorization = await authorizationUrl(oc, ['files:read'])
        const apiBack = await followInBrowser(page, apiAuthorization.url, (p) => consent(p, ['files:read']))
        const apiTokens = await exchange(oc, apiAuthorization, apiBack)
        assert.equal(await apiStatus(ctx.base, apiTokens.access_token), 200)
        const atMcp = await fetch(`${ctx.base}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${apiTokens.access_token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
        assert.equal(atMcp.status, 401, 'a token for the API is not for /mcp')
        assert.match(String(atMcp.headers.get('www-authenticate')), /error="invalid_token"/)
      } finally {
        await browser?.close()
      }
    })
  })
}
