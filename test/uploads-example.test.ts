// The client example of docs/uploads.md works as written: the documented code block is examples/upload.mjs
// byte for byte, and that file, run as its own process against a running server with an API key that has
// only files:write, uploads files of both sizes (single PUT and multipart).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { createAccount, ENGINES } from './support/harness.ts'
import {
  digestsSettled,
  type ListeningContext,
  MULTIPART_THRESHOLD,
  sha256,
  sha256Of,
  startListening,
} from './support/uploads.ts'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '..')
const example = path.join(root, 'examples', 'upload.mjs')

test('docs/uploads.md shows examples/upload.mjs exactly', async () => {
  const doc = await readFile(path.join(root, 'docs', 'uploads.md'), 'utf8')
  const code = await readFile(example, 'utf8')
  assert.ok(
    doc.includes(`\`\`\`js\n${code}\`\`\``),
    'the documented client code differs from examples/upload.mjs',
  )
})

for (const engine of ENGINES) {
  describe(`the documented client example [${engine}]`, () => {
    let ctx: ListeningContext | undefined
    before(async () => {
      ctx = await startListening(engine)
    })
    after(async () => {
      await ctx?.stop()
    })

    test('uploads a small file and a multipart one, and prints their IDs', async () => {
      assert.ok(ctx)
      const account = await createAccount(ctx.app)
      const key = await account.key(['files:write'])
      for (const [name, type, content] of [
        ['notes.txt', 'text/plain', Buffer.from('written by the example\n')],
        ['big.bin', 'application/octet-stream', randomBytes(MULTIPART_THRESHOLD + 1024)],
      ] as const) {
        const file = path.join(ctx.dataDir, name)
        await writeFile(file, content)
        const { stdout } = await run(process.execPath, [example, file, type], {
          cwd: root,
          env: { PATH: process.env.PATH, COFFER_URL: ctx.base, COFFER_API_KEY: key },
        })
        const fileId = stdout.trim()
        assert.match(fileId, /^fil_[0-9a-z]{26}$/)
        // On S3 a multipart upload's digests come from a job after it completes.
        await digestsSettled(ctx, fileId)
        const stored = await ctx.app.services.files.get(account.id, fileId)
        assert.deepEqual(
          { name: stored.name, contentType: stored.contentType, size: stored.size, sha256: stored.sha256 },
          { name, contentType: type, size: content.length, sha256: sha256(content) },
        )
        assert.equal(await sha256Of(await ctx.blobs.get(stored.blobKey)), sha256(content))
      }
    })
  })
}
