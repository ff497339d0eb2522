import type { Kysely } from 'kysely'

// A backup in progress holds back the removal of deleted files' blobs (storage/backups.ts): the rows it
// copied keep their blobs until it has copied them too, so a backup taken while the server runs is
// consistent. A hold ends by itself at `until`, should the backup die.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('backup_holds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('until', 'bigint', (c) => c.notNull())
    .execute()
}
