// The coffer package (packages/coffer) as someone outside a clone gets it: `npm pack` builds the command and the
// SDK to JavaScript (its prepack), `npm install -g` of the tarball installs nothing else, and the command and
// `coffer/client` work on this machine's own Node.js (Debian's, older than the clone's 24) against a real server:
// an upload, a list, a download; the SDK's types check a program that uses them, and refuse a wrong call.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { OLDEST_NODE, tooOld } from '../src/clients/coffer-cli/node-version.ts'
import { createAccount } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '..')
/** The machine's Node.js, as a person without the clone has it (Debian's 20 here). */
const SYSTEM_NODE = '/usr/bin/node'
const systemNode = existsSync(SYSTEM_NODE) ? (await run(SYSTEM_NODE, ['--version'])).stdout.trim() : undefined
const noSystemNode = systemNode
  ? tooOld(systemNode)
    ? `this machine's Node.js ${systemNode} is older than ${OLDEST_NODE}`
    : false
  : `no Node.js at ${SYSTEM_NODE} (apt-get install nodejs)`
/** A shell's PATH without the clone's node_modules/.bin: `node` is the machine's. */
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin'

test('tooOld: the versions the command refuses to start on', () => {
  assert.equal(OLDEST_NODE, '20.19.0')
  for (const old of ['v18.20.4', '20.18.3', 'v20.0.0', '19.9.0']) assert.equal(tooOld(old), true, old)
  for (const fine of ['v20.19.0', '20.20.2', 'v22.12.0', '24.21.0', 'v25.0.0'])
    assert.equal(tooOld(fine), false, fine)
})

describe('the coffer package, packed and installed outside the clone', { skip: noSystemNode }, () => {
  let dir: string
  let tarball: string
  let ctx: ListeningContext
  let env: Record<string, string>
  const coffer = (args: string[]) =>
    run(path.join(dir, 'prefix', 'bin', 'coffer'), args, { env, cwd: dir, maxBuffer: 64 * 1024 * 1024 })

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-package-'))
    await run('npm', ['pack', './packages/coffer', '--pack-destination', dir], { cwd: ROOT })
    const [packed] = (await readdir(dir)).filter((name) => name.endsWith('.tgz'))
    assert.ok(packed, 'npm pack made a tarball')
    tarball = path.join(dir, packed)
    ctx = await startListening('sqlite')
    const account = await createAccount(ctx.app)
    env = {
      PATH: SYSTEM_PATH,
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      COFFER_URL: ctx.base,
      COFFER_TOKEN: account.token,
    }
    // Installed as a person installs it, by the machine's npm and Node.js; the package depends on nothing.
    await run('npm', ['install', '--global', '--offline', '--prefix', path.join(dir, 'prefix'), tarball], {
      env: { ...env, npm_config_cache: path.join(dir, 'npm-cache') },
    })
  })
  after(async () => {
    await ctx?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('the tarball holds the built command and SDK with their types, and no TypeScript source', async () => {
    const listing = (await run('tar', ['-tzf', tarball])).stdout.split('\n').filter(Boolean)
    for (const file of [
      'package/package.json',
      'package/dist/coffer.js',
      'package/dist/client/index.js',
      'package/dist/client/index.d.ts',
      'package/dist/client/api.d.ts',
    ]) {
      assert.ok(listing.includes(file), `${file} is packed`)
    }
    assert.deepEqual(
      listing.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')),
      [],
    )
    const manifest = JSON.parse(
      await readFile(path.join(dir, 'prefix', 'lib', 'node_modules', 'coffer', 'package.json'), 'utf8'),
    )
    assert.equal(manifest.dependencies, undefined, 'nothing else to install')
  })

  test(`the command on the machine's Node.js: version, help, upload, list, download`, async () => {
    const version = await coffer(['--version'])
    assert.equal(
      version.stdout.trim(),
      JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')).version,
    )
    assert.match((await coffer(['--help'])).stdout, /Usage: coffer \[options\] \[command\]/)
    const bytes = randomBytes(6 * 1024 * 1024)
    const source = path.join(dir, 'sent.bin')
    await writeFile(source, bytes)
    const uploaded = JSON.parse((await coffer(['--json', 'upload', source, '--folder', 'Packed'])).stdout)
    const [done] = uploaded.uploaded
    assert.equal(done.file.size, bytes.length)
    const listed = JSON.parse((await coffer(['--json', 'ls', '--folder', 'Packed'])).stdout)
    assert.deepEqual(
      listed.map((file: { id: string }) => file.id),
      [done.file.id],
    )
    const copy = path.join(dir, 'copy.bin')
    await coffer(['download', done.file.id, '-o', copy])
    assert.ok(bytes.equals(await readFile(copy)), 'the same bytes came back')
  })

  test('coffer/client from the package: its types check a program and refuse a wrong call; it runs', async () => {
    const project = path.join(dir, 'project')
    await mkdir(project)
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }))
    await run('npm', ['install', '--offline', tarball], {
      cwd: project,
      env: { ...env, npm_config_cache: path.join(dir, 'npm-cache') },
    })
    await writeFile(
      path.join(project, 'use.ts'),
      `import { Coffer, CofferError, type File } from 'coffer/client'

const coffer = new Coffer({ url: process.env.COFFER_URL ?? '', credentials: { apiKey: process.env.COFFER_TOKEN ?? '' } })
const files: File[] = []
for await (const file of coffer.files.list({ limit: 10 })) files.push(file)
const names: string[] = files.map((file) => file.name)
// @ts-expect-error: a file's id is a string
await coffer.files.get(42).catch((error: unknown) => error instanceof CofferError)
console.log(JSON.stringify(names))
`,
    )
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [path.join(ROOT, 'node_modules', '@types')],
        },
        files: ['use.ts'],
      }),
    )
    const tsc = path.join(ROOT, 'node_modules', 'typescript7', 'bin', 'tsc')
    const checked = await run(process.execPath, [tsc, '--project', project]).catch(
      (error: { stdout: string }) => error,
    )
    assert.equal(checked.stdout, '', 'the program type-checks against the packed declarations')
    // The same program as JavaScript, on the machine's Node.js.
    const source = await readFile(path.join(project, 'use.ts'), 'utf8')
    await writeFile(
      path.join(project, 'use.mjs'),
      source
        .replace(', type File', '')
        .replace('const files: File[] = []', 'const files = []')
        .replace('const names: string[]', 'const names')
        .replace('(error: unknown)', '(error)'),
    )
    const ran = await run('node', ['use.mjs'], { cwd: project, env })
    assert.deepEqual(JSON.parse(ran.stdout), ['sent.bin'])
  })
})
