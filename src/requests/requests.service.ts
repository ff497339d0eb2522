import type { Kysely } from 'kysely'
import type { Config } from '../config.ts'
import type { Database } from '../db/schema.ts'
import type { ServiceDeps } from '../services.ts'

export class RequestsService {
  readonly #db: Kysely<Database>
  readonly #config: Config
  constructor(deps: ServiceDeps) {
    this.#db = deps.db.kysely
    this.#config = deps.config
  }
  get placeholder() {
    return [this.#db, this.#config]
  }
}
