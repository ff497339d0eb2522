// Runs the real server in a process of its own, for measurements where the client must not share its memory
// or CPU accounting: the 1 GiB upload test and bench/uploads.ts. It serves a fresh data directory on a free
// port of 127.0.0.1, makes an account with an API key, prints one JSON line
// `{ base, token, accountId, dataDir, pid }` and runs until SIGTERM.
//   node test/support/upload-server.ts        (DATABASE_URL, MAX_FILE_SIZE... are passed through)
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildApp } from '../../src/app.ts'
import { ALL_SCOPES } from '../../src/platform/auth/scopes.ts'
import { LocalBlobStore } from '../../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { openDatabase } from '../../src/platform/db/open.ts'

const port: number = await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number }
    probe.close(() => resolve(port))
  })
})
const dataDir = await mkdtemp(path.join(process.env.UPLOAD_SERVER_TMP ?? tmpdir(), 'coffer-server-'))
const config = loadConfig({
  ...process.env,
  PORT: String(port),
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  DATA_DIR: dataDir,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
})
const db = openDatabase(config)
await migrate(db)
const app = await buildApp({ config, db, blobs: await LocalBlobStore.open(path.join(dataDir, 'blobs')) })
const account = await app.services.accounts.create({ email: `bench-${port}@example.com` })
const { secret } = await app.services.apiKeys.create({
  accountId: account.id,
  name: 'bench',
  scopes: ALL_SCOPES,
})
await app.listen({ port, host: '127.0.0.1' })
process.stdout.write(
  `${JSON.stringify({ base: config.publicUrl, token: secret, accountId: account.id, dataDir, pid: process.pid })}\n`,
)

process.once('SIGTERM', async () => {
  app.server.closeAllConnections()
  await app.close()
  await db.close()
  await rm(dataDir, { recursive: true, force: true })
  process.exit(0)
})
