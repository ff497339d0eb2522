// Records of unfinished uploads (resume.ts) kept in a browser's IndexedDB, so that an upload goes on after a
// reload, a closed tab or a lost connection: one database per `name` (a page names it by its server and
// account, or by its file request, so that two accounts on one browser never see each other's uploads), with
// one object store of records keyed by their key. Where IndexedDB cannot be used (a private window that refuses
// it, a sandboxed frame, Node), the records are kept in memory instead: resuming then works within the page,
// not across reloads. The few IndexedDB types used are declared here, so this module needs no DOM library.
import { memoryResumeStore, type ResumeRecord, type ResumeStore, usableRecord } from './resume.ts'

interface IdbRequest<T> {
  readonly result: T
  readonly error: unknown
  onsuccess: (() => void) | null
  onerror: (() => void) | null
}

interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: (() => void) | null
  onblocked: (() => void) | null
}

interface IdbObjectStore {
  get(key: string): IdbRequest<unknown>
  getAll(): IdbRequest<unknown[]>
  put(value: unknown, key: string): IdbRequest<unknown>
  delete(key: string): IdbRequest<undefined>
}

interface IdbTransaction {
  objectStore(name: string): IdbObjectStore
  readonly error: unknown
  oncomplete: (() => void) | null
  onerror: (() => void) | null
  onabort: (() => void) | null
}

interface IdbDatabase {
  readonly objectStoreNames: { contains(name: string): boolean }
  createObjectStore(name: string): unknown
  transaction(store: string, mode: 'readonly' | 'readwrite'): IdbTransaction
  close(): void
  onversionchange: (() => void) | null
}

interface IdbFactory {
  open(name: string, version?: number): IdbOpenRequest
}

const STORE = 'records'
/** How long opening the database may take before the records are kept in memory instead. */
const OPEN_TIMEOUT_MS = 3000

/** Opens (creating) the database, or resolves undefined where IndexedDB cannot be used. */
function openDatabase(name: string): Promise<IdbDatabase | undefined> {
  let factory: IdbFactory | undefined
  try {
    // A frame without storage throws on reading it.
    factory = (globalThis as { indexedDB?: IdbFactory }).indexedDB
  } catch {
    factory = undefined
  }
  const idb = factory
  if (!idb) return Promise.resolve(undefined)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), OPEN_TIMEOUT_MS)
    const done = (db: IdbDatabase | undefined) => {
      clearTimeout(timer)
      resolve(db)
    }
    try {
      const request = idb.open(name, 1)
      request.onupgradeneeded = () => {
        if (!request.result.objectStoreNames.contains(STORE)) request.result.createObjectStore(STORE)
      }
      request.onsuccess = () => {
        const db = request.result
        // Another tab upgrading the database is not held up by this one.
        db.onversionchange = () => db.close()
        done(db)
      }
      request.onerror = () => done(undefined)
    } catch {
      done(undefined)
    }
  })
}

/** Runs `action` in a transaction on the records, resolving with its request's result once committed. */
function run<T>(
  db: IdbDatabase,
  mode: 'readonly' | 'readwrite',
  action: (store: IdbObjectStore) => IdbRequest<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const transaction = db.transaction(STORE, mode)
    const request = action(transaction.objectStore(STORE))
    transaction.oncomplete = () => resolve(request.result)
    transaction.onerror = () => reject(transaction.error ?? request.error)
    transaction.onabort = () => reject(transaction.error ?? new Error('The transaction was aborted.'))
  })
}

/**
 * The records of unfinished uploads in the IndexedDB database `name`, or in memory where IndexedDB cannot be
 * used. A record that cannot be used (not a record, or its grant expired) is as none, and is removed.
 */
export function indexedDbResumeStore(name: string): ResumeStore {
  let opened: Promise<ResumeStore | IdbDatabase> | undefined
  const backend = () => {
    opened ??= openDatabase(name).then((db) => db ?? memoryResumeStore())
    return opened
  }
  const isDb = (value: ResumeStore | IdbDatabase): value is IdbDatabase => 'transaction' in value
  const drop = (db: IdbDatabase, key: string) =>
    run(db, 'readwrite', (store) => store.delete(key)).catch(() => undefined)
  return {
    async get(key) {
      const db = await backend()
      if (!isDb(db)) return db.get(key)
      const record = await run(db, 'readonly', (store) => store.get(key))
      if (record === undefined) return undefined
      if (usableRecord(record) && record.key === key) return record
      await drop(db, key)
      return undefined
    },
    async set(key, record) {
      const db = await backend()
      if (!isDb(db)) return db.set(key, record)
      await run(db, 'readwrite', (store) => store.put({ ...record, key }, key))
    },
    async delete(key) {
      const db = await backend()
      if (!isDb(db)) return db.delete(key)
      await run(db, 'readwrite', (store) => store.delete(key))
    },
    async list() {
      const db = await backend()
      if (!isDb(db)) return db.list()
      const records = await run(db, 'readonly', (store) => store.getAll())
      const usable: ResumeRecord[] = []
      for (const record of records) {
        if (usableRecord(record)) usable.push(record)
        else if (typeof (record as { key?: unknown } | null)?.key === 'string') {
          await drop(db, (record as { key: string }).key)
        }
      }
      return usable
    },
  }
}
