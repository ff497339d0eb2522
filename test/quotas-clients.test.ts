// The usage and quota on every client (issue 45, 2): the SDK's `coffer.usage()`, `coffer stats` for people and
// with --json, MCP's `get_usage` (through `coffer mcp` over stdio), and the refusal of an upload past the quota
// as each client shows it (the SDK's CofferError, the command's error, the MCP tool's error). On each engine.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { Coffer, CofferError } from '../src/clients/sdk/index.ts'
import { connectMcp, runCoffer } from './support/coffer-command.ts'
import { createAccount, createFile, ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

for (const engine of ENGINES) {
  describe(`quotas on the clients [${engine}]`, () => {
    let ctx: ListeningContext
    let dir: string
    before(async () => {
      ctx = await startListening(engine, { env: { DEFAULT_QUOTA_BYTES: '10000' } })
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-quota-clients-'))
    })
    after(async () => {
      await ctx?.stop()
      await rm(dir, { recursive: true, force: true })
    })

    test('the SDK: usage(), and an upload past the quota refused with quota_exceeded before a byte is sent', async () => {
      const account = await createAccount(ctx.app)
      await createFile(ctx, account.id, { content: 'x'.repeat(2500) })
      const client = new Coffer({ url: ctx.base, credentials: { apiKey: account.token } })
      assert.deepEqual(await client.usage(), {
        files: 1,
        bytes: 2500,
        trashFiles: 0,
        trashBytes: 0,
        quotaBytes: 10000,
        maxFileBytes: null,
        available: 7500,
      })
      await assert.rejects(
        client.files.upload(new Blob([new Uint8Array(7501)]), { name: 'big.bin' }),
        (error: unknown) => {
          assert.ok(error instanceof CofferError, String(error))
          assert.equal(error.code, 'quota_exceeded')
          assert.equal(error.status, 413)
          assert.match(error.message, /2500 bytes \(2.5 kB\) are used of 10000/)
          return true
        },
      )
      assert.equal((await client.usage()).bytes, 2500)
    })

    test('coffer stats: the storage line for people, the usage in --json; an upload past the quota fails with its message', async () => {
      const account = await createAccount(ctx.app)
      await createFile(ctx, account.id, { content: 'y'.repeat(4000) })
      const deleted = await createFile(ctx, account.id, { content: 'z'.repeat(1000) })
      await ctx.app.services.files.delete(account.id, deleted.id, { error() {}, warn() {} } as never)
      await ctx.app.services.quotas.set(account.id, { maxFileBytes: 3000 })
      const env = { COFFER_URL: ctx.base, COFFER_TOKEN: account.token }
      const human = await runCoffer(['stats', '--days', '1'], env)
      assert.equal(human.code, 0, human.stderr)
      assert.match(
        human.stdout,
        /^Storage: 5 kB of 10 kB used \(50%\), 5 kB left\nFiles: 2, 1 of them in the trash \(1 kB\)\nLargest file: 3 kB\nViews 0, downloads 0/,
      )
      const json = await runCoffer(['--json', 'stats', '--days', '1'], env)
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(JSON.parse(json.stdout).usage, {
        files: 2,
        bytes: 5000,
        trashFiles: 1,
        trashBytes: 1000,
        quotaBytes: 10000,
        maxFileBytes: 3000,
        available: 5000,
      })
      const local = path.join(dir, `big-${engine}.bin`)
      await writeFile(local, Buffer.alloc(3001))
      const refused = await runCoffer(['upload', local], env)
      assert.notEqual(refused.code, 0)
      assert.match(
        `${refused.stdout}${refused.stderr}`,
        /big-\w+\.bin" has 3001 bytes \(3 kB\): more than the largest file this account may upload, 3000 bytes/,
      )
    })

    test('MCP: get_usage says it in words and in structured content', async () => {
      const account = await createAccount(ctx.app)
      await createFile(ctx, account.id, { content: 'w'.repeat(1500) })
      const client = await connectMcp(ctx.base, account.token, ['--poll', '0'])
      try {
        const tool = (await client.listTools()).tools.find((t) => t.name === 'get_usage')
        assert.equal(tool?.annotations?.readOnlyHint, true)
        const result = (await client.callTool({ name: 'get_usage', arguments: {} })) as CallToolResult
        assert.equal(result.isError, undefined)
        assert.deepEqual(result.content, [
          { type: 'text', text: '1.5 kB stored of a quota of 10 kB: 8.5 kB left. 1 file.' },
        ])
        assert.deepEqual(result.structuredContent, {
          files: 1,
          bytes: 1500,
          trashFiles: 0,
          trashBytes: 0,
          quotaBytes: 10000,
          maxFileBytes: null,
          available: 8500,
        })
      } finally {
        await client.close()
      }
    })
  })
}
