// What the rest of Coffer sees of the metadata database, whichever engine runs it (sqlite.ts, postgres.ts;
// open.ts picks one). Repositories hold the SQL; services see only `Transactor`, to group a repository's
// statements into one transaction.
import type { CompiledQuery, Kysely, Transaction as KyselyTransaction } from 'kysely'
import type { Engine } from './engine.ts'
import type { ListenerLog } from './pg-change-listener.ts'
import type { Database } from './schema.ts'

export type Transaction = KyselyTransaction<Database>

/** Where a repository runs a statement: on its own, or inside the caller's transaction. */
export type Executor = Kysely<Database> | Transaction

/** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
export type Transactor = <T>(work: (trx: Transaction) => Promise<T>) => Promise<T>

/**
 * Sets of rows whose changes every process learns of, so that it may keep what it read of them in memory
 * (read-path/cached-lookup.ts). On PostgreSQL, triggers notify a channel (migrations 0004, 0007 and 0025);
 * on SQLite, any commit to the database file counts as a change to every set.
 * - `credentials`: every API key, and OAuth access tokens with their grants; not scoped.
 * - `files_folders_shares`: an account's files, folders and shares; scoped by the account id.
 */
export type WatchedRows = 'credentials' | 'files_folders_shares'

export interface Db {
  kysely: Kysely<Database>
  engine: Engine
  transaction: Transactor
  /**
   * Runs a read-only query outside any transaction, for request handling. It sees every write this process
   * committed, and those of other processes committed before the current turn of the event loop began. On
   * SQLite it runs at once on a read connection of its own, which skips the single writer connection's queue
   * (WAL lets readers and the writer work side by side), in a snapshot that lasts until the turn's end (see
   * SnapshotReader in sqlite.ts). Never use it for a read that must see the caller's own open transaction.
   * A `statementName` makes PostgreSQL keep the parsed and planned statement on each connection; give one
   * only to queries whose SQL never changes.
   */
  read<Row>(query: CompiledQuery<Row>, statementName?: string): Promise<Row[]>
  /**
   * For caches: a number that changes whenever rows of `watched` (of `scope`, for a scoped set) may have
   * changed, in any process; NaN when that cannot be known. Stamp an entry with the epoch taken before
   * reading it, and trust the entry only while the epoch is the same. On SQLite it changes with every commit,
   * seen from the next turn of the event loop as `read` sees commits. On PostgreSQL it changes with every
   * notification of a change to those rows, and with every write of this process to them at once (any write,
   * for `files_folders_shares`), so that its next read sees its own writes before their notification arrives.
   */
  changeEpoch(watched: WatchedRows, scope?: string): number
  /** Resolves when the database answers a trivial query (readiness). */
  ping(): Promise<void>
  /**
   * Runs the background job `name` unless a process sharing the database runs it now, so that however many
   * processes serve, each job runs in one at a time; resolves with whether it ran. Within a process, the
   * job's own caller runs one at a time. PostgreSQL: a session advisory lock, held on the process's lock
   * connection (not the pool's) while the job runs and released when it ends, or when its process or that
   * connection dies. SQLite: one process holds the database, so the job runs.
   */
  exclusively(name: string, job: () => Promise<void>): Promise<boolean>
  /** The query pool's connections now (PostgreSQL); undefined for SQLite, which has no pool. */
  poolUse(): PoolUse | undefined
  /** Where trouble in the background (PostgreSQL's change notifications) is logged; until called, nowhere. */
  reportTo(log: ListenerLog): void
  close(): Promise<void>
}

export interface PoolUse {
  /** Connections open, idle or not. */
  open: number
  idle: number
  /** Queries waiting for a connection. */
  waiting: number
}

/** `Db.exclusively`, as the background jobs take it. */
export type Exclusively = Db['exclusively']

export interface DatabaseOptions {
  /** `postgres://...`, or undefined for SQLite in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** PostgreSQL pool size per process. */
  poolSize?: number
}
