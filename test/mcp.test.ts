// `coffer mcp`, the MCP server for desktop assistants, as one meets it: the official SDK's client starts the
// command over stdio (credentials from COFFER_URL and COFFER_TOKEN, as a host's configuration gives them), lists
// its tools and resources, and calls every tool against a real server on both engines; a tool whose scope the
// key lacks is refused with the API's error; changes to the file list are notified.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import {
  type CallToolResult,
  ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { Coffer } from '../src/clients/sdk/index.ts'
import { connectMcp } from './support/coffer-command.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import { submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const TOOLS = [
  'search_files',
  'list_files',
  'get_file',
  'read_file',
  'upload_file',
  'rename_file',
  'move_file',
  'delete_file',
  'list_trash',
  'restore_file',
  'list_folders',
  'create_folder',
  'share_file',
  'share_folder',
  'update_share',
  'list_shares',
  'list_folder_shares',
  'create_file_request',
  'list_file_requests',
  'list_submissions',
  'get_analytics',
  'get_usage',
  'list_activity',
]

/** An MCP client of `coffer mcp` signed in with `token`. */
for (const engine of ENGINES) {
  describe(`coffer mcp [${engine}]`, () => {
    let ctx: ListeningContext
    before(async () => {
      ctx = await startListening(engine)
    })
    after(async () => {
      await ctx?.stop()
    })

    test('every tool, listed with its schema and hints, then called; the file resource read', async () => {
      const account = await createAccount(ctx.app)
      const client = await connectMcp(ctx.base, account.token)
      try {
        const { tools } = await client.listTools()
        assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort())
        const byName = new Map(tools.map((t) => [t.name, t]))
        assert.equal(byName.get('delete_file')?.annotations?.destructiveHint, true)
        assert.equal(byName.get('search_files')?.annotations?.readOnlyHint, true)
        assert.equal(byName.get('list_trash')?.annotations?.readOnlyHint, true)
        assert.deepEqual(
          [
            byName.get('restore_file')?.annotations?.readOnlyHint,
            byName.get('restore_file')?.annotations?.destructiveHint,
          ],
          [false, false],
        )
        assert.equal(byName.get('upload_file')?.annotations?.readOnlyHint, false)
        assert.deepEqual(byName.get('get_file')?.inputSchema.required, ['fileId'])
        // Every argument says what it is: a model fills in only what it understands.
        const undescribed = tools.flatMap((t) =>
          Object.entries((t.inputSchema.properties ?? {}) as Record<string, { description?: string }>)
            .filter(([, schema]) => !schema.description)
            .map(([name]) => `${t.name}.${name}`),
        )
        assert.deepEqual(undescribed, [])

        const call = async (name: string, args: Record<string, unknown>) => {
          const result = (await client.callTool({ name, arguments: args })) as CallToolResult
          assert.ok(!result.isError, `${name}: ${JSON.stringify(result.content)}`)
          return result
        }
        const folder = (await call('create_folder', { name: 'Notes' })).structuredContent as { id: string }
        const uploaded = await call('upload_file', {
          name: 'todo.md',
          content: '# Todo\n- ship',
          folderId: folder.id,
        })
        const file = uploaded.structuredContent as { id: string; contentType: string }
        assert.equal(file.contentType, 'text/markdown')
        const binary = await call('upload_file', {
          name: 'pixel.bin',
          content: Buffer.from([0, 1, 2, 255]).toString('base64'),
          encoding: 'base64',
        })
        const binaryId = (binary.structuredContent as { id: string }).id

        const found = await call('search_files', { query: 'TODO' })
        assert.match((found.content[0] as { text: string }).text, /todo\.md \(fil_/)
        assert.deepEqual(
          (found.structuredContent as { data: { id: string }[] }).data.map((f) => f.id),
          [file.id],
        )
        assert.equal(
          ((await call('list_files', { folderId: folder.id })).structuredContent as { data: unknown[] }).data
            .length,
          1,
        )
        assert.equal(
          ((await call('get_file', { fileId: file.id })).structuredContent as { name: string }).name,
          'todo.md',
        )
        const read = await call('read_file', { fileId: file.id })
        assert.equal((read.content[0] as { text: string }).text, '# Todo\n- ship')
        const notText = (await client.callTool({
          name: 'read_file',
          arguments: { fileId: binaryId },
        })) as CallToolResult
        assert.ok(notText.isError)
        assert.equal(
          (
            (await call('rename_file', { fileId: file.id, name: 'done.md' })).structuredContent as {
              name: string
            }
          ).name,
          'done.md',
        )
        assert.equal(
          (
            (await call('move_file', { fileId: file.id, folderId: null })).structuredContent as {
              folderId: null
            }
          ).folderId,
          null,
        )
        assert.equal(
          ((await call('list_folders', {})).structuredContent as { data: unknown[] }).data.length,
          1,
        )

        const share = (await call('share_file', { fileId: file.id })).structuredContent as {
          id: string
          publicUrl: string
        }
        assert.equal((await fetch(share.publicUrl)).status, 200)
        // Sharing again with settings applies them to the link that is on; the API's bounds are the tools'.
        const locked = await call('share_file', { fileId: file.id, password: 'open sesame', maxDownloads: 5 })
        assert.deepEqual(
          [
            (locked.structuredContent as { id: string }).id,
            (locked.structuredContent as { hasPassword: boolean }).hasPassword,
            (locked.structuredContent as { maxDownloads: number }).maxDownloads,
          ],
          [share.id, true, 5],
        )
        const tooShort = (await client.callTool({
          name: 'share_file',
          arguments: { fileId: file.id, password: 'abc' },
        })) as CallToolResult
        assert.equal(tooShort.isError, true)
        const open = await call('share_file', { fileId: file.id, password: null, maxDownloads: null })
        assert.deepEqual(open.content, [{ type: 'text', text: `Shared: ${share.publicUrl}` }])
        assert.equal((open.structuredContent as { hasPassword: boolean }).hasPassword, false)
        assert.equal(
          ((await call('list_shares', {})).structuredContent as { data: unknown[] }).data.length,
          1,
        )
        const turnedOff = await call('update_share', { shareId: share.id, isActive: false })
        assert.equal((turnedOff.structuredContent as { isActive: boolean }).isActive, false)
        // The link's state (share-state.ts), in the text a model reads as in the data.
        assert.equal((turnedOff.structuredContent as { state: string }).state, 'disabled')
        assert.deepEqual(turnedOff.content, [{ type: 'text', text: `${share.publicUrl} is disabled.` }])
        assert.equal(
          ((await call('get_analytics', { shareId: share.id })).structuredContent as { views: number }).views,
          1,
        )
        assert.equal(((await call('get_analytics', {})).structuredContent as { views: number }).views, 1)
        // With a period, the days that had any, in words a person reads ("1 view").
        const today = new Date().toISOString().slice(0, 10)
        const days = await call('get_analytics', { shareId: share.id, from: today })
        assert.deepEqual(days.content, [
          { type: 'text', text: `1 view, 0 downloads in all.\n${today}: 1 view, 0 downloads` },
        ])

        const request = (
          await call('create_file_request', {
            title: 'Receipts',
            folderId: folder.id,
            maxFiles: 3,
            allowedTypes: ['.pdf'],
          })
        ).structuredContent as { id: string }
        // The limits given are the request's.
        const api = new Coffer({ url: ctx.base, credentials: { apiKey: account.token } })
        const limits = await api.requests.limits(request.id)
        assert.deepEqual([limits.maxFiles, limits.allowedTypes], [3, ['.pdf']])
        const requests = await call('list_file_requests', {})
        assert.equal((requests.structuredContent as { data: unknown[] }).data.length, 1)
        assert.match(
          JSON.stringify(requests.content),
          new RegExp(`Receipts \\(${request.id}, open, 0 files\\)`),
        )
        assert.deepEqual(
          (
            (await call('list_submissions', { requestId: request.id })).structuredContent as {
              data: unknown[]
            }
          ).data,
          [],
        )
        // What was sent, said as a person would read it: the file, who sent it, their message.
        const publicId = new URL((await api.requests.get(request.id)).publicUrl).pathname
          .split('/')
          .at(-1) as string
        await submit(
          ctx.app,
          publicId,
          { submitterName: 'Ada', submitterEmail: 'ada@example.com', message: 'The March "receipts".' },
          [{ name: 'march.pdf', type: 'application/pdf', content: '%PDF-1.4 march' }],
        )
        const received = await call('list_submissions', { requestId: request.id })
        // The message quoted as JSON quotes a string, its own quotes escaped.
        assert.equal(
          (received.content as { text: string }[])[0]?.text,
          `march.pdf (14 bytes) from Ada <ada@example.com>, ${(received.structuredContent as { data: { createdAt: string }[] }).data[0]?.createdAt}, saying: "The March \\"receipts\\"."`,
        )
        const sentId = (received.structuredContent as { data: { file: { id: string } }[] }).data[0]?.file.id

        // Resources: the files, by the template coffer://files/{fileId}; text as text, other bytes in base64.
        const { resourceTemplates } = await client.listResourceTemplates()
        assert.deepEqual(
          resourceTemplates.map((t) => t.uriTemplate),
          ['coffer://files/{fileId}'],
        )
        const { resources } = await client.listResources()
        assert.deepEqual(
          resources.map((r) => r.uri).sort(),
          [`coffer://files/${binaryId}`, `coffer://files/${file.id}`, `coffer://files/${sentId}`].sort(),
        )
        const text = await client.readResource({ uri: `coffer://files/${file.id}` })
        assert.equal((text.contents[0] as { text: string }).text, '# Todo\n- ship')
        const blob = await client.readResource({ uri: `coffer://files/${binaryId}` })
        assert.equal(
          (blob.contents[0] as { blob: string }).blob,
          Buffer.from([0, 1, 2, 255]).toString('base64'),
        )

        assert.deepEqual((await call('delete_file', { fileId: binaryId })).structuredContent, {
          id: binaryId,
        })
        const gone = (await client.callTool({
          name: 'get_file',
          arguments: { fileId: binaryId },
        })) as CallToolResult
        assert.ok(gone.isError)
        assert.match((gone.content[0] as { text: string }).text, /^not_found: /)
        // Into the trash, for the server's 30 days; listed there, and restored as it was.
        const deleted = await call('delete_file', { fileId: file.id })
        assert.equal(
          (deleted.content[0] as { text: string }).text,
          `Moved ${file.id} to the trash: restore_file brings it back, with its share link, for 30 days.`,
        )
        const trash = await call('list_trash', { limit: 1 })
        const trashed = (
          trash.structuredContent as { data: { id: string; deletedAt: string; purgeAt: string }[] }
        ).data
        assert.deepEqual(
          trashed.map((f) => f.id),
          [file.id],
          'the most recently deleted first',
        )
        assert.match(
          (trash.content[0] as { text: string }).text,
          new RegExp(
            `^done\\.md \\(${file.id}, .+\\), deleted ${trashed[0]?.deletedAt}, restorable until ${trashed[0]?.purgeAt}\nMore: pass cursor "`,
          ),
        )
        const restored = await call('restore_file', { fileId: file.id })
        assert.match((restored.content[0] as { text: string }).text, /^Restored done\.md \(fil_/)
        assert.equal((restored.structuredContent as { id: string }).id, file.id)
        assert.equal(
          ((await call('get_file', { fileId: file.id })).structuredContent as { name: string }).name,
          'done.md',
        )
        assert.deepEqual(
          ((await call('list_trash', {})).structuredContent as { data: { id: string }[] }).data.map(
            (f) => f.id,
          ),
          [binaryId],
        )
        const again = (await client.callTool({
          name: 'restore_file',
          arguments: { fileId: file.id },
        })) as CallToolResult
        assert.ok(again.isError)
        assert.match((again.content[0] as { text: string }).text, /^not_found: /)
      } finally {
        await client.close()
      }
    })

    test("share_folder: by name or id, its page lists the folder's files; settings applied, bounds kept, update_share reaches it", async () => {
      const account = await createAccount(ctx.app)
      const api = new Coffer({ url: ctx.base, credentials: { apiKey: account.token } })
      const folder = await api.folders.create('Reports')
      await api.files.upload(Buffer.from('q1 figures'), { name: 'q1.txt', folderId: folder.id })
      const client = await connectMcp(ctx.base, account.token)
      try {
        const { tools } = await client.listTools()
        const shareFolder = tools.find((t) => t.name === 'share_folder')
        assert.deepEqual(
          [shareFolder?.annotations?.readOnlyHint, shareFolder?.annotations?.destructiveHint],
          [false, false],
        )
        const call = async (name: string, args: Record<string, unknown>) =>
          (await client.callTool({ name, arguments: args })) as CallToolResult
        const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text

        // By its name in another case, as the server compares folder names.
        const shared = await call('share_folder', { name: 'reports' })
        assert.ok(!shared.isError, textOf(shared))
        const share = shared.structuredContent as { id: string; publicUrl: string; folderId: string }
        assert.equal(share.folderId, folder.id)
        assert.equal(
          textOf(shared),
          `Shared Reports: ${share.publicUrl} (active, link ${share.id}). Its page lists the files in Reports as they are when it is opened (1 file now; files added later appear too), each downloadable, with Download all as one zip.`,
        )
        const page = await fetch(share.publicUrl)
        assert.equal(page.status, 200)
        assert.match(await page.text(), /q1\.txt/)

        // Settings applied to the link that is on; the API's bounds are the tool's.
        const locked = await call('share_folder', {
          folderId: folder.id,
          password: 'open sesame',
          maxDownloads: 5,
        })
        assert.ok(!locked.isError, textOf(locked))
        const lockedShare = locked.structuredContent as {
          id: string
          hasPassword: boolean
          maxDownloads: number
        }
        assert.deepEqual(
          [lockedShare.id, lockedShare.hasPassword, lockedShare.maxDownloads],
          [share.id, true, 5],
        )
        assert.match(textOf(locked), /Download all as one zip, after asking for the password\.$/)
        assert.match(await (await fetch(share.publicUrl)).text(), /This link is protected/)
        const tooShort = await call('share_folder', { folderId: folder.id, password: 'abc' })
        assert.equal(tooShort.isError, true)
        const tooMany = await call('share_folder', { folderId: folder.id, maxDownloads: 0 })
        assert.equal(tooMany.isError, true)

        // A folder that is not there, or none named: refusals the model can act on.
        const unknown = await call('share_folder', { name: 'Nope' })
        assert.equal(unknown.isError, true)
        assert.match(textOf(unknown), /^not_found: No folder is named "Nope"\./)
        const unnamed = await call('share_folder', {})
        assert.equal(unnamed.isError, true)
        assert.match(textOf(unnamed), /^invalid_argument: /)

        const listed = await call('list_folder_shares', {})
        assert.equal(textOf(listed), `Reports: ${share.publicUrl} (active, 1 view, 0 downloads; ${share.id})`)
        // update_share takes a folder's link as well as a file's; share_folder turns it on again.
        const off = await call('update_share', { shareId: share.id, isActive: false })
        assert.ok(!off.isError, textOf(off))
        assert.equal(textOf(off), `${share.publicUrl} is disabled.`)
        assert.equal((await fetch(share.publicUrl)).status, 410, "a link turned off is gone, as a file's")
        const missing = await call('update_share', { shareId: 'shr_0000000000000000', isActive: false })
        assert.match(textOf(missing), /^not_found: /)
        const again = await call('share_folder', { name: 'Reports', password: null })
        assert.deepEqual(
          [
            (again.structuredContent as { id: string }).id,
            (again.structuredContent as { state: string }).state,
            (again.structuredContent as { hasPassword: boolean }).hasPassword,
          ],
          [share.id, 'active', false],
        )
        // A link whose downloads reached its limit says that it does not open.
        const zip = await fetch(`${share.publicUrl}/zip`)
        assert.equal(zip.status, 200)
        await zip.arrayBuffer()
        const exhausted = await call('share_folder', { name: 'Reports', maxDownloads: 1 })
        assert.match(
          textOf(exhausted),
          new RegExp(
            `^${share.publicUrl} does not open: it is exhausted \\(1 downloads of 1 allowed\\)\\. Link ${share.id}\\.`,
          ),
        )
      } finally {
        await client.close()
      }
    })

    test('the client is told when the file list changes: after its own tool at once, after others by polling', async () => {
      const account = await createAccount(ctx.app)
      const token = await account.key(['files:read', 'files:write'])
      const elsewhere = new Coffer({ url: ctx.base, credentials: { apiKey: token } })
      const listChanges = (client: Client) => {
        const seen = { count: 0 }
        client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
          seen.count++
        })
        return seen
      }

      const quiet = await connectMcp(ctx.base, token, ['--poll', '0'])
      try {
        const seen = listChanges(quiet)
        await quiet.callTool({ name: 'upload_file', arguments: { name: 'mine.txt', content: 'mine' } })
        assert.equal(seen.count, 1, 'sent before the tool’s answer')
        await quiet.callTool({ name: 'list_files', arguments: {} })
        await elsewhere.files.upload(new Blob(['theirs']), { name: 'theirs.txt' })
        await setTimeout(1500)
        assert.equal(seen.count, 1, 'without polling, changes made elsewhere go unnoticed')
      } finally {
        await quiet.close()
      }

      const watching = await connectMcp(ctx.base, token, ['--poll', '0.2'])
      try {
        const seen = listChanges(watching)
        await setTimeout(600)
        assert.equal(seen.count, 0, 'nothing changed')
        await elsewhere.files.upload(new Blob(['later']), { name: 'later.txt' })
        const deadline = Date.now() + 10_000
        while (seen.count === 0 && Date.now() < deadline) await setTimeout(50)
        assert.equal(seen.count, 1, 'told once of a file uploaded by another client')
      } finally {
        await watching.close()
      }
    })

    test('a tool whose scope the credential lacks is refused, as the API refuses it', async () => {
      const account = await createAccount(ctx.app)
      const client = await connectMcp(ctx.base, await account.key(['files:read']))
      try {
        assert.equal(
          ((await client.callTool({ name: 'list_files', arguments: {} })) as CallToolResult).isError,
          undefined,
        )
        const refused = (await client.callTool({
          name: 'create_folder',
          arguments: { name: 'Nope' },
        })) as CallToolResult
        assert.ok(refused.isError)
        assert.match((refused.content[0] as { text: string }).text, /^insufficient_scope: .*folders:write/)
        const notRestored = (await client.callTool({
          name: 'restore_file',
          arguments: { fileId: 'fil_0000000000000000000000000' },
        })) as CallToolResult
        assert.match((notRestored.content[0] as { text: string }).text, /^insufficient_scope: .*files:write/)
        assert.equal(
          ((await client.callTool({ name: 'list_trash', arguments: {} })) as CallToolResult).isError,
          undefined,
        )
        const invalid = (await client.callTool({ name: 'get_file', arguments: {} })) as CallToolResult
        assert.ok(invalid.isError, 'a missing argument is refused by the schema')
      } finally {
        await client.close()
      }
    })
  })
}

describe('coffer mcp, with a server that keeps no trash [sqlite]', () => {
  let ctx: ListeningContext
  before(async () => {
    ctx = await startListening('sqlite', { env: { TRASH_RETENTION_DAYS: '0' } })
  })
  after(async () => {
    await ctx?.stop()
  })

  test('delete_file says the delete is final; list_trash that the server keeps none', async () => {
    const account = await createAccount(ctx.app)
    const client = await connectMcp(ctx.base, account.token)
    try {
      const uploaded = (await client.callTool({
        name: 'upload_file',
        arguments: { name: 'final.txt', content: 'final' },
      })) as CallToolResult
      const fileId = (uploaded.structuredContent as { id: string }).id
      const deleted = (await client.callTool({
        name: 'delete_file',
        arguments: { fileId },
      })) as CallToolResult
      assert.equal(
        (deleted.content[0] as { text: string }).text,
        `Deleted ${fileId} for good: this server keeps no trash, so it cannot be restored.`,
      )
      const trash = (await client.callTool({ name: 'list_trash', arguments: {} })) as CallToolResult
      assert.equal(
        (trash.content[0] as { text: string }).text,
        'The trash is empty: this server keeps none (deletes are final).',
      )
      const restored = (await client.callTool({
        name: 'restore_file',
        arguments: { fileId },
      })) as CallToolResult
      assert.ok(restored.isError)
    } finally {
      await client.close()
    }
  })
})
