// The two database engines Coffer runs on: SQLite (embedded, the default) and PostgreSQL (scale-out).
export type Engine = 'sqlite' | 'postgres'
