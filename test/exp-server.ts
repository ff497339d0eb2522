import path from 'node:path'
import { buildApp } from '../src/app.ts'
import { LocalBlobStore } from '../src/blob/local-blob-store.ts'
import { loadConfig } from '../src/config.ts'
import { openDatabase } from '../src/db/database.ts'
const config = loadConfig({ ...process.env })
const db = openDatabase(config)
const blobs = await LocalBlobStore.open(path.join(config.dataDir, 'blobs'))
const app = await buildApp({ config, db, blobs, logger: false })
const mode = process.env.MODE
import { DatabaseSync } from 'node:sqlite'
import { selectFiles, toStoredFile } from '../src/files/files.service.ts'
const raw = new DatabaseSync(path.join(config.dataDir, 'coffer.sqlite'))
for (const p of (process.env.PRAGMAS ?? '').split(';').filter(Boolean)) raw.exec(p)
const q = selectFiles(db.kysely).where('files.id', '=', 'x').where('files.account_id', '=', 'y').compile()
const st = raw.prepare(q.sql)
const st1 = raw.prepare('select id, name from files where id = ?')
const dv = raw.prepare('pragma data_version')
app.get('/x', async () => {
  if (mode === 'static') return { ok: 1 }
  if (mode === 'single') {
    const r = st1.get('fil_b0000333333') as any
    return { data: { id: r.id, name: r.name } }
  }
  if (mode === 'pragma') {
    dv.get()
    return { ok: 1 }
  }
  if (mode === 'raw') {
    const f = toStoredFile(st.all('fil_b0000333333', 'acc_bench')[0] as any)
    return { data: { id: f.id, name: f.name } }
  }
  const f = await app.services.files.get('acc_bench', 'fil_b0000333333')
  return { data: { id: f.id, name: f.name } }
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.once('SIGINT', () => void app.close().then(() => process.exit(0)))
