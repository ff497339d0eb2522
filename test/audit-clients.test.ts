// The audit log on the clients (issue 45, 4): `coffer activity` for people and with --json, and MCP's
// `list_activity` (through `coffer mcp` over stdio), each showing the entries the API answers, by family, with
// who acted and from where; a credential without audit:read is refused on each. On each engine.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { connectMcp, runCoffer } from './support/coffer-command.ts'
import { ALL, createAccount, createFile, ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

for (const engine of ENGINES) {
  describe(`the audit log on the clients [${engine}]`, () => {
    let ctx: ListeningContext
    before(async () => {
      ctx = await startListening(engine)
    })
    after(async () => {
      await ctx?.stop()
    })

    /** An account whose key "laptop" deleted a file over HTTP, so that its log holds a file.trashed by it. */
    async function accountWithActivity() {
      const account = await createAccount(ctx.app)
      const { secret } = await ctx.app.services.apiKeys.create({
        accountId: account.id,
        name: 'laptop',
        scopes: ALL,
      })
      const file = await createFile(ctx, account.id, { name: 'old-draft.txt' })
      const deleted = await fetch(`${ctx.base}/api/v1/files/${file.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${secret}` },
      })
      assert.equal(deleted.status, 200)
      return { account, token: secret }
    }

    test('coffer activity: a table by family, the same entries as JSON; without audit:read, refused', async () => {
      const { account, token } = await accountWithActivity()
      const env = { COFFER_URL: ctx.base, COFFER_TOKEN: token }
      const human = await runCoffer(['activity', '--kind', 'file'], env)
      assert.equal(human.code, 0, human.stderr)
      const lines = human.stdout.trimEnd().split('\n')
      assert.match(lines[0] ?? '', /^WHEN\s+WHAT\s+BY\s+FROM\s+DETAILS$/)
      assert.equal(lines.length, 2, human.stdout)
      assert.match(
        lines[1] ?? '',
        /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}\s+file\.trashed\s+API key "laptop"\s+127\.0\.0\.1\s+name=old-draft\.txt/,
      )

      const json = await runCoffer(['--json', 'activity', '--limit', '3'], env)
      assert.equal(json.code, 0, json.stderr)
      const entries = JSON.parse(json.stdout)
      assert.ok(entries.length >= 2 && entries.length <= 3)
      assert.equal(entries[0].kind, 'file.trashed')
      assert.deepEqual(entries[0].actor.name, 'laptop')

      const narrow = await account.key(['files:read'])
      const refused = await runCoffer(['activity'], { COFFER_URL: ctx.base, COFFER_TOKEN: narrow })
      assert.equal(refused.code, 3, refused.stdout + refused.stderr)
      assert.match(refused.stderr, /audit:read/)
    })

    test('MCP list_activity: the entries in words and as structured content', async () => {
      const { token } = await accountWithActivity()
      const client = await connectMcp(ctx.base, token, ['--poll', '0'])
      try {
        const tool = (await client.listTools()).tools.find((t) => t.name === 'list_activity')
        assert.equal(tool?.annotations?.readOnlyHint, true)
        const result = (await client.callTool({
          name: 'list_activity',
          arguments: { kind: 'file' },
        })) as CallToolResult
        assert.ok(!result.isError, JSON.stringify(result.content))
        const text = (result.content[0] as { text: string }).text
        assert.match(text, /file\.trashed by API key "laptop" from 127\.0\.0\.1 \(name=old-draft\.txt\)/)
        const structured = result.structuredContent as { data: { kind: string }[] }
        assert.deepEqual(
          structured.data.map((entry) => entry.kind),
          ['file.trashed'],
        )
        const bad = (await client.callTool({
          name: 'list_activity',
          arguments: { kind: 'nothing' },
        })) as CallToolResult
        assert.equal(bad.isError, true)
      } finally {
        await client.close()
      }
    })
  })
}
