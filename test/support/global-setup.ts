// `npm test`'s global setup (node --test-global-setup), for what every test file would otherwise make for
// itself:
// - one Ceph cluster for the whole run, when Ceph is installed, which every test file reaches through the
//   TEST_S3_* variables it inherits (see s3.ts);
// - on PostgreSQL, one database with every migration applied, which the apps of the tests are given copies of
//   (CREATE DATABASE … TEMPLATE, about half the time of creating one and migrating it; see harness.ts).
// A test file run on its own without this setup makes both for itself.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { loadConfig } from '../../src/platform/config.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { openDatabase } from '../../src/platform/db/open.ts'
import { type Ceph, cephMissing, startCeph } from './ceph.ts'

let ceph: Ceph | undefined
let template: string | undefined

export async function globalSetup(): Promise<void> {
  await Promise.all([startS3(), migratedTemplate()])
}

async function startS3(): Promise<void> {
  if (cephMissing || process.env.TEST_S3_ENDPOINT) return
  ceph = await startCeph()
  process.env.TEST_S3_ENDPOINT = ceph.endpoint
  process.env.TEST_S3_ACCESS_KEY_ID = ceph.accessKeyId
  process.env.TEST_S3_SECRET_ACCESS_KEY = ceph.secretAccessKey
}

async function migratedTemplate(): Promise<void> {
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl || process.env.TEST_DATABASE_TEMPLATE) return
  const name = `coffer_template_${randomBytes(6).toString('hex')}`
  await adminQuery(adminUrl, `create database ${name}`)
  template = name
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const db = openDatabase({ ...loadConfig({ DATABASE_URL: url.toString() }), poolSize: 1 })
  try {
    await migrate(db)
  } finally {
    await db.close()
  }
  process.env.TEST_DATABASE_TEMPLATE = name
}

async function adminQuery(adminUrl: string, query: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(query)
  } finally {
    await admin.end()
  }
}

export async function globalTeardown(): Promise<void> {
  await ceph?.stop()
  const adminUrl = process.env.TEST_DATABASE_URL
  if (template && adminUrl) await adminQuery(adminUrl, `drop database if exists ${template} with (force)`)
}
