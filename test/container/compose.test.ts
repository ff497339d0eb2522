// compose.yaml, checked without a container engine (this machine cannot pull images): its YAML parses, its
// services are the fleet's (nginx, three Coffer processes, PostgreSQL, Redis, an S3 store, the bucket job), every
// variable it gives Coffer is one Coffer's configuration reads (or the AWS SDK's own) and together they pass that
// configuration's validation, the processes get the settings of test/fleet.test.ts, nginx's configuration is
// examples/nginx-fleet.conf with the compose network's addresses (and nginx accepts it), and the bucket job makes
// its bucket on a real S3 store when the run has one. Also: the image's ignore files are one, and the
// Containerfile names no source file but src/server.ts (the npm scripts name the rest). The image itself is
// built and tried by test/container/run.sh.
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { DeleteBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { parse } from 'yaml'

const ROOT = path.resolve(import.meta.dirname, '../..')
const NGINX = '/usr/sbin/nginx'

/** The variables the AWS SDK reads itself (README, "Blobs in S3-compatible storage"). */
const AWS_SDK_SETTINGS = ['AWS_REGION', 'AWS_ENDPOINT_URL_S3', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']

/** What each process of test/fleet.test.ts gets (beside its DATA_DIR and the test's own rate limit and webhooks). */
const FLEET_SETTINGS = {
  TRUST_PROXY: 'true',
  BLOB_STORE: 's3',
  S3_FORCE_PATH_STYLE: 'true',
  AWS_REGION: 'us-east-1',
}
const FLEET_VARIABLES = [
  'DATABASE_URL',
  'REDIS_URL',
  'PUBLIC_URL',
  'S3_BUCKET',
  'AWS_ENDPOINT_URL_S3',
  ...AWS_SDK_SETTINGS,
]

interface Service {
  image?: string
  build?: unknown
  environment?: Record<string, string>
  depends_on?: Record<string, { condition: string }>
  volumes?: string[]
  ports?: string[]
  command?: string[]
  healthcheck?: { test: string[] }
}

const compose = parse(await readFile(path.join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>
  volumes: Record<string, unknown>
}
const COFFERS = ['coffer1', 'coffer2', 'coffer3']

/** `${NAME:-default}` and `${NAME:?message}` as compose reads them, with `values` for what .env would say. */
function interpolate(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    const value = values[name]
    if (value) return value
    assert.notEqual(kind, '?', `${name} is required: ${rest}`)
    return kind === '-' ? (rest ?? '') : ''
  })
}

/** Every source file under src/, wherever the folders have moved. */
async function sourceFiles(dir = path.join(ROOT, 'src')): Promise<string[]> {
  const files: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) files.push(...(await sourceFiles(full)))
    else if (entry.name.endsWith('.ts')) files.push(full)
  }
  return files
}

/** The module that reads the environment: the one that exports `loadConfig`. */
async function configModule(): Promise<{ file: string; text: string }> {
  for (const file of await sourceFiles()) {
    const text = await readFile(file, 'utf8')
    if (/export function loadConfig\(/.test(text)) return { file, text }
  }
  assert.fail('no source file exports loadConfig')
}

/** An nginx configuration's directives: without comments, blank lines and indentation. */
const directives = (text: string) =>
  text
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter(Boolean)

describe('compose.yaml', () => {
  test('the fleet: nginx in front of three Coffer processes, PostgreSQL, Redis, an S3 store, the bucket job', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), [
      'bucket',
      'coffer1',
      'coffer2',
      'coffer3',
      'nginx',
      'postgres',
      'redis',
      's3',
    ])
    for (const [name, service] of Object.entries(compose.services)) {
      assert.ok(service.image, `${name} names its image`)
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        assert.ok(compose.services[dependency], `${name} depends on ${dependency}, a service`)
      }
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0] as string
        if (source.startsWith('.')) assert.ok(existsSync(path.join(ROOT, source)), `${source} exists`)
        else assert.ok(source in compose.volumes, `${source} is a declared volume`)
      }
    }
    for (const name of [...COFFERS, 'bucket']) {
      const service = compose.services[name] as Service
      assert.equal(service.image, 'localhost/coffer:latest')
      assert.deepEqual(
        service.build,
        { context: '.', dockerfile: 'Containerfile' },
        `${name} is built from the Containerfile`,
      )
    }
    const nginx = compose.services.nginx as Service
    assert.deepEqual(Object.keys(nginx.depends_on ?? {}).sort(), COFFERS)
    for (const name of COFFERS) {
      const service = compose.services[name] as Service
      assert.deepEqual(service.depends_on, {
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        bucket: { condition: 'service_completed_successfully' },
      })
      assert.match(service.healthcheck?.test.join(' ') ?? '', /\/healthz/)
    }
  })

  test('every variable given to Coffer is one its configuration reads (or the AWS SDK), and they pass it', async () => {
    const { file, text } = await configModule()
    const read = new Set<string>()
    for (const match of text.matchAll(
      /env\.([A-Z][A-Z0-9_]*)|env, '([A-Z][A-Z0-9_]*)'|env\['([A-Z][A-Z0-9_]*)'\]/g,
    )) {
      read.add((match[1] ?? match[2] ?? match[3]) as string)
    }
    assert.ok(
      read.has('DATABASE_URL') && read.has('TRUST_PROXY'),
      `${path.relative(ROOT, file)} is the configuration`,
    )
    const { loadConfig } = await import(pathToFileURL(file).href)
    const dotEnv = {
      POSTGRES_PASSWORD: 'p'.repeat(24),
      S3_ACCESS_KEY_ID: 'coffer',
      S3_SECRET_ACCESS_KEY: 's'.repeat(24),
    }
    for (const name of [...COFFERS, 'bucket']) {
      const environment = (compose.services[name] as Service).environment ?? {}
      for (const variable of Object.keys(environment)) {
        assert.ok(
          read.has(variable) || AWS_SDK_SETTINGS.includes(variable),
          `${name}: ${variable} is read by Coffer`,
        )
      }
      // The image's own settings beneath compose's, as the engine merges them.
      const env: Record<string, string> = {
        DATA_DIR: '/data',
        HOST: '0.0.0.0',
        PORT: '8080',
        ...Object.fromEntries(
          Object.entries(environment).map(([key, value]) => [key, interpolate(String(value), dotEnv)]),
        ),
      }
      const config = loadConfig(env)
      assert.equal(config.databaseUrl, `postgres://coffer:${dotEnv.POSTGRES_PASSWORD}@postgres:5432/coffer`)
      assert.equal(config.redisUrl, 'redis://redis:6379')
      assert.equal(config.blobStore.kind, 's3')
      assert.equal(config.trustProxy, 1)
      assert.equal(config.publicUrl, 'http://localhost:8080')
      for (const [variable, value] of Object.entries(FLEET_SETTINGS))
        assert.equal(env[variable], value, variable)
      for (const variable of FLEET_VARIABLES) assert.ok(env[variable], `${name} sets ${variable}`)
    }
    // The processes and the bucket job share one set of settings; the S3 store signs with the same credentials.
    const [first, ...others] = [...COFFERS, 'bucket'].map(
      (name) => (compose.services[name] as Service).environment,
    )
    for (const other of others) assert.deepEqual(other, first)
    const s3 = (compose.services.s3 as Service).environment ?? {}
    assert.equal(s3.AWS_ACCESS_KEY_ID, first?.AWS_ACCESS_KEY_ID)
    assert.equal(s3.AWS_SECRET_ACCESS_KEY, first?.AWS_SECRET_ACCESS_KEY)
    const nginxPort = interpolate((compose.services.nginx as Service).ports?.[0] ?? '', {}).split(':')[0]
    assert.equal(interpolate(first?.PUBLIC_URL ?? '', {}), `http://localhost:${nginxPort}`)
  })

  test("nginx's configuration is examples/nginx-fleet.conf on the compose network, and nginx accepts it", async () => {
    const composed = await readFile(path.join(ROOT, 'deploy/compose/nginx.conf'), 'utf8')
    const example = await readFile(path.join(ROOT, 'examples/nginx-fleet.conf'), 'utf8')
    const upstreams = (text: string) =>
      directives(text).filter((line) => line.startsWith('server ') && line.includes(':'))
    assert.deepEqual(
      upstreams(composed),
      COFFERS.map((name) => `server ${name}:8080 max_fails=3 fail_timeout=5s;`),
    )
    const rest = (text: string) =>
      directives(text).filter(
        (line) => !(line.startsWith('server ') && line.includes(':')) && !line.startsWith('server_name'),
      )
    assert.deepEqual(rest(composed), rest(example))

    if (!existsSync(NGINX)) return
    // `nginx -t` (which binds nothing) with the processes on 127.0.0.1: their names resolve on the compose network only.
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-compose-nginx-'))
    try {
      const site = composed.replace(/server coffer(\d):8080/g, 'server 127.0.0.1:808$1')
      const main = `daemon off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/client;\n  proxy_temp_path ${dir}/proxy;\n  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n${site}\n}\n`
      await writeFile(path.join(dir, 'nginx.conf'), main)
      const checked = spawnSync(
        NGINX,
        ['-t', '-q', '-e', `${dir}/error.log`, '-p', dir, '-c', path.join(dir, 'nginx.conf')],
        {
          encoding: 'utf8',
          timeout: 10_000,
        },
      )
      assert.equal(checked.status, 0, checked.stderr)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  test('the bucket job makes its bucket, and finds it made when run again', {
    skip: process.env.TEST_S3_ENDPOINT ? false : 'no S3 store in this run (TEST_S3_ENDPOINT)',
  }, async () => {
    const bucket = `coffer-compose-${randomBytes(4).toString('hex')}`
    const env = {
      ...process.env,
      S3_BUCKET: bucket,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ENDPOINT_URL_S3: process.env.TEST_S3_ENDPOINT,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: process.env.TEST_S3_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.TEST_S3_SECRET_ACCESS_KEY,
    }
    const job = path.join(ROOT, 'deploy/compose/create-bucket.mjs')
    const run = () => promisify(execFile)(process.execPath, [job], { env, timeout: 60_000 })
    assert.match((await run()).stdout, new RegExp(`bucket ${bucket} created`))
    assert.match((await run()).stdout, new RegExp(`bucket ${bucket} is there`))
    const client = new S3Client({
      endpoint: env.AWS_ENDPOINT_URL_S3,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID as string,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string,
      },
    })
    try {
      await client.send(new HeadBucketCommand({ Bucket: bucket }))
      await client.send(new DeleteBucketCommand({ Bucket: bucket }))
    } finally {
      client.destroy()
    }
  })
})

describe('the Containerfile', () => {
  test('podman and docker leave the same files out of the context', async () => {
    assert.equal(
      await readFile(path.join(ROOT, '.dockerignore'), 'utf8'),
      await readFile(path.join(ROOT, '.containerignore'), 'utf8'),
    )
  })

  test('names no source file but src/server.ts: the npm scripts name the rest', async () => {
    const text = await readFile(path.join(ROOT, 'Containerfile'), 'utf8')
    const named = [...text.matchAll(/\bsrc\/[\w./-]+/g)].map((match) => match[0])
    assert.deepEqual([...new Set(named)], ['src/server.ts'])
  })
})
