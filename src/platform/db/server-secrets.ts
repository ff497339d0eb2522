// Secrets the server makes for itself and keeps in the database (`server_secrets`), so that every process of
// a deployment shares them. They are never logged or sent.
import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Db } from './database.ts'
import type { Database } from './schema.ts'

export class ServerSecrets {
  readonly #db: Kysely<Database>
  readonly #keys = new Map<string, Promise<Buffer>>()

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** The secret stored under `name`; the first process to ask stores `generate()`'s. */
  async getOrCreate(name: string, generate: () => string): Promise<string> {
    // Two processes starting together both try; the primary key keeps the first, and both read it back.
    await this.#db
      .insertInto('server_secrets')
      .values({ name, value: generate(), created_at: Date.now() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute()
    const row = await this.#db
      .selectFrom('server_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow()
    return row.value
  }

  /**
   * A 32-byte key stored under `name` (made by the first process that asks), read once per instance. A failed
   * read is forgotten, so that a database hiccup does not poison the key for the life of the process.
   */
  key(name: string): Promise<Buffer> {
    let key = this.#keys.get(name)
    if (!key) {
      key = this.getOrCreate(name, () => randomBytes(32).toString('base64url'))
        .then((secret) => Buffer.from(secret, 'base64url'))
        .catch((error: unknown) => {
          this.#keys.delete(name)
          throw error
        })
      this.#keys.set(name, key)
    }
    return key
  }
}
