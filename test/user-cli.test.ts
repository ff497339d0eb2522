// The coffer command as a person and a script use it, against a real server on both engines: signed in by the
// device flow in a terminal (tmux) with the approval made in Chromium, a directory uploaded with its progress
// bars seen on the captured screen, a link shared, a download killed and resumed, --json outputs parsed, and
// the exit codes.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { ALL_SCOPES } from '../src/auth/scopes.ts'
import { formatSize } from '../src/format-size.shared.ts'
import { browserMissing, launchBrowser, newContext } from './support/browser.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import { consent, signInIfAsked } from './support/oauth.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '..')
const MAIN = path.join(ROOT, 'src', 'user-cli', 'main.ts')
const PASSWORD = 'correct horse battery staple'
const tmuxMissing = (await run('tmux', ['-V']).then(
  () => false,
  () => true,
))
  ? 'tmux is not installed (apt-get install tmux)'
  : false

interface Result {
  code: number
  stdout: string
  stderr: string
}

/** Runs `coffer args…` with `env`, without a terminal; resolves with its exit code and output. */
function coffer(args: string[], env: Record<string, string>, stdin?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: env.HOME ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(stdin ?? '')
  })
}

/** A terminal of 120 × 30 in tmux, running `command`; its screen is read with `screen()`. */
class Terminal {
  readonly name = `coffer-${randomBytes(4).toString('hex')}`

  async start(command: string): Promise<void> {
    await run('tmux', ['new-session', '-d', '-s', this.name, '-x', '120', '-y', '30', command])
  }

  async screen(): Promise<string> {
    return (await run('tmux', ['capture-pane', '-p', '-t', this.name])).stdout
  }

  /** Reads the screen until `test` passes (at most `ms`); resolves with that screen. */
  async waitFor(test: (screen: string) => boolean, ms = 20_000): Promise<string> {
    const deadline = Date.now() + ms
    for (;;) {
      const screen = await this.screen()
      if (test(screen)) return screen
      if (Date.now() > deadline) assert.fail(`the terminal never showed what was expected:\n${screen}`)
      await sleep(50)
    }
  }

  async stop(): Promise<void> {
    await run('tmux', ['kill-session', '-t', this.name]).catch(() => {})
  }
}

const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`

for (const engine of ENGINES) {
  describe(`the coffer command [${engine}]`, () => {
    let ctx: ListeningContext
    let dir: string
    /** The environment of a person's shell: their config directory, no COFFER_ variables. */
    let env: Record<string, string>

    before(async () => {
      ctx = await startListening(engine)
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-'))
      env = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config') }
    })
    after(async () => {
      await ctx?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    test('login by the device flow in a terminal, approved in Chromium; the credentials kept mode 600', {
      skip: browserMissing || tmuxMissing,
    }, async () => {
      const email = `cli-${engine}@example.com`
      await ctx.app.services.accounts.create({ email, password: PASSWORD })
      const terminal = new Terminal()
      const shellEnv = Object.entries(env)
        .map(([name, value]) => `${name}=${quote(value)}`)
        .join(' ')
      await terminal.start(
        `${shellEnv} ${quote(process.execPath)} ${quote(MAIN)} login ${ctx.base} --no-browser; echo EXIT=$?; sleep 30`,
      )
      const browser = await launchBrowser()
      try {
        const asked = await terminal.waitFor((screen) => /enter the code:\s+\S+/.test(screen))
        const code = /enter the code:\s+(\S+)/.exec(asked)?.[1] as string
        const address = /To sign in, open (\S+)/.exec(asked)?.[1] as string
        assert.equal(address, `${ctx.base}/oauth/device`)
        const page = await (await newContext(browser)).newPage()
        await page.goto(address)
        await page.getByLabel('Code').fill(code)
        await page.getByRole('button', { name: 'Continue' }).click()
        await page.getByText(code).waitFor()
        await page.getByRole('button', { name: 'Continue' }).click()
        await signInIfAsked(page, email, PASSWORD)
        await consent(page, ALL_SCOPES)
        await page.getByRole('heading', { name: 'All set' }).waitFor()
        const done = await terminal.waitFor((screen) => screen.includes('EXIT='))
        assert.match(
          done,
          new RegExp(`Signed in to ${ctx.base.replaceAll('.', '\\.')} \\(saved as "default"\\)`),
        )
        assert.match(done, /EXIT=0/)
      } finally {
        await browser.close()
        await terminal.stop()
      }
      const file = path.join(env.XDG_CONFIG_HOME as string, 'coffer', 'credentials.json')
      assert.equal((await stat(file)).mode & 0o777, 0o600)
      assert.equal((await stat(path.dirname(file))).mode & 0o777, 0o700)
      const saved = JSON.parse(await readFile(file, 'utf8'))
      assert.equal(saved.servers.default.url, ctx.base)
      assert.ok(saved.servers.default.oauth.tokens.refreshToken)

      // Signed in: the token works, then logout revokes it (the server forgets the grant).
      const listed = await coffer(['--json', 'ls'], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.deepEqual(JSON.parse(listed.stdout), [])

      // Three commands at once with an expired access token: one refresh under the credentials' lock, the others
      // take its tokens. Each refreshing on its own would spend the same refresh token three times, and the
      // server ends a grant whose refresh token is used twice.
      const expired = structuredClone(saved)
      expired.servers.default.oauth.tokens.expiresAt = 0
      await writeFile(file, JSON.stringify(expired))
      const together = await Promise.all([1, 2, 3].map(() => coffer(['--json', 'ls'], env)))
      assert.deepEqual(
        together.map((result) => [result.code, result.stderr]),
        [1, 2, 3].map(() => [0, '']),
      )
      const rotated = JSON.parse(await readFile(file, 'utf8')).servers.default.oauth.tokens
      assert.notEqual(rotated.refreshToken, saved.servers.default.oauth.tokens.refreshToken)
      assert.ok(rotated.expiresAt > Date.now())
      assert.equal((await coffer(['ls'], env)).code, 0, 'the grant lives on')

      const accessToken = rotated.accessToken
      const out = await coffer(['logout'], env)
      assert.equal(out.code, 0, out.stderr)
      const refused = await fetch(`${ctx.base}/api/v1/files`, {
        headers: { authorization: `Bearer ${accessToken}` },
      })
      assert.equal(refused.status, 401)
      assert.equal((await coffer(['ls'], env)).code, 3, 'signed out')
    })

    test('upload a directory with progress bars, share, list, move, download resumed after a kill', {
      skip: tmuxMissing,
    }, async () => {
      const account = await createAccount(ctx.app)
      const key = await coffer(['login', ctx.base, '--with-key'], env, `${account.token}\n`)
      assert.equal(key.code, 0, key.stderr)

      const tree = path.join(dir, `tree-${engine}`)
      await mkdir(path.join(tree, 'inner'), { recursive: true })
      const big = randomBytes(100 * 1024 * 1024)
      await writeFile(path.join(tree, 'big.bin'), big)
      await writeFile(path.join(tree, 'inner', 'notes.txt'), 'notes')
      await writeFile(path.join(tree, 'inner', 'second.bin'), randomBytes(20 * 1024 * 1024))
      const total = formatSize(big.length + 5 + 20 * 1024 * 1024).replace('.', '\\.')

      // At a terminal: a bar per file under way and the total, then a line per file with its id.
      const terminal = new Terminal()
      const shellEnv = Object.entries(env)
        .map(([name, value]) => `${name}=${quote(value)}`)
        .join(' ')
      await terminal.start(
        `${shellEnv} ${quote(process.execPath)} ${quote(MAIN)} upload ${quote(tree)} --folder Trees; echo EXIT=$?; sleep 30`,
      )
      try {
        const drawing = await terminal.waitFor(
          (screen) => /Total\s+\S*░/.test(screen) && /big\.bin\s+\S*[█░]+\s+\d+%/.test(screen),
        )
        assert.match(
          drawing,
          new RegExp(`Total\\s+[█░]+\\s+\\d+%\\s+[\\d.,]+ \\S+ of ${total}\\s+[\\d.,]+ \\S+/s\\s+\\S+ left`),
        )
        const done = await terminal.waitFor((screen) => screen.includes('EXIT='), 60_000)
        assert.match(done, /EXIT=0/)
        for (const name of ['big.bin', 'inner/notes.txt', 'inner/second.bin']) {
          assert.match(done, new RegExp(`fil_\\w+  ${tree}/${name}  `))
        }
        assert.match(done, new RegExp(`Total ${total} of ${total} in [\\d.]+ s \\([\\d.,]+ \\S+/s\\)`))
      } finally {
        await terminal.stop()
      }

      // Without a terminal, results only; --json for scripts.
      const listed = await coffer(['--json', 'ls', '--folder', 'Trees'], env)
      assert.equal(listed.code, 0, listed.stderr)
      const files = JSON.parse(listed.stdout) as { id: string; name: string; size: number }[]
      assert.deepEqual(files.map((f) => f.name).sort(), ['big.bin', 'notes.txt', 'second.bin'])
      const human = await coffer(['ls', '--query', 'NOTES'], env)
      assert.match(human.stdout, /^ID\s+SIZE\s+ADDED\s+SHARED\s+NAME\n fil_|^ID/)
      assert.match(human.stdout, /notes\.txt/)
      assert.doesNotMatch(human.stdout, /big\.bin/)

      const shared = await coffer(['--json', 'share', 'notes.txt', '--expires', '7d'], env)
      assert.equal(shared.code, 0, shared.stderr)
      const share = JSON.parse(shared.stdout)
      assert.ok(Date.parse(share.expiresAt) > Date.now() + 6 * 86_400_000)
      assert.equal((await fetch(share.publicUrl)).status, 200)
      assert.equal((await coffer(['share', 'notes.txt'], env)).stdout.trim(), share.publicUrl)
      const moved = await coffer(['--json', 'mv', 'notes.txt', '--name', 'todo.txt', '--root'], env)
      assert.deepEqual([JSON.parse(moved.stdout).name, JSON.parse(moved.stdout).folderId], ['todo.txt', null])
      assert.equal((await coffer(['unshare', 'todo.txt'], env)).code, 0)
      assert.equal((await fetch(share.publicUrl)).status, 410, 'a link turned off is gone')

      // A download killed part way resumes from where its part file ends.
      const bigFile = files.find((f) => f.name === 'big.bin') as { id: string }
      const target = path.join(dir, `copy-${engine}.bin`)
      const partial = `${target}.${bigFile.id}.part`
      const first = spawn(process.execPath, [MAIN, 'download', bigFile.id, '-o', target], {
        env: { ...env, PATH: process.env.PATH ?? '' },
        stdio: 'ignore',
      })
      const deadline = Date.now() + 20_000
      while (((await stat(partial).catch(() => undefined))?.size ?? 0) < 1024 * 1024) {
        assert.ok(Date.now() < deadline, 'the download never started')
        await sleep(5)
      }
      first.kill('SIGKILL')
      await new Promise((resolve) => first.once('close', resolve))
      const had = (await stat(partial)).size
      assert.ok(had < big.length, 'killed before the end')
      const resumed = await coffer(['--json', 'download', bigFile.id, '-o', target], env)
      assert.equal(resumed.code, 0, resumed.stderr)
      assert.equal(JSON.parse(resumed.stdout).resumedFrom, had)
      assert.ok((await readFile(target)).equals(big), 'the bytes, whole')
      await assert.rejects(stat(partial))

      const request = await coffer(
        ['--json', 'request', 'create', '--title', 'Receipts', '--max-files', '3'],
        env,
      )
      assert.equal(request.code, 0, request.stderr)
      const created = JSON.parse(request.stdout)
      assert.equal((await fetch(created.publicUrl)).status, 200)
      const submissions = await coffer(['--json', 'request', 'submissions', created.id], env)
      assert.deepEqual(JSON.parse(submissions.stdout), [])
      const stats = await coffer(['--json', 'stats', '--days', '7'], env)
      assert.equal(JSON.parse(stats.stdout).daily.days.length, 7)

      const removed = await coffer(['--json', 'rm', 'todo.txt', bigFile.id], env)
      assert.equal(JSON.parse(removed.stdout).deletedIds.length, 2)
    })

    test('exit codes: 2 for usage, 3 for a refused credential, 1 for a failure, each with a hint', async () => {
      const scriptEnv = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'empty'), COFFER_URL: ctx.base }
      const usage = await coffer(['ls', '--bogus'], scriptEnv)
      assert.equal(usage.code, 2)
      assert.match(usage.stderr, /unknown option '--bogus'/)
      const stranger = await coffer(['--json', 'ls'], {
        ...scriptEnv,
        COFFER_TOKEN: `coffer_${'x'.repeat(43)}`,
      })
      assert.equal(stranger.code, 3)
      assert.equal(JSON.parse(stranger.stdout).error.code, 'unauthorized')
      const account = await createAccount(ctx.app)
      const readOnly = await account.key(['files:read'])
      const missing = await coffer(['download', 'fil_0000000000000000000000000'], {
        ...scriptEnv,
        COFFER_TOKEN: readOnly,
      })
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /^Error: .+\nHint: .+/)
      const unknown = await coffer(['--json', 'share', 'x.txt'], { ...scriptEnv, COFFER_TOKEN: readOnly })
      assert.deepEqual([unknown.code, JSON.parse(unknown.stdout).error.code], [1, 'not_found'])
      const file = await coffer(['upload', path.join(ROOT, 'package.json')], {
        ...scriptEnv,
        COFFER_TOKEN: readOnly,
      })
      assert.equal(file.code, 3, 'uploading needs files:write')
      assert.match(file.stderr, /files:write/)
      const notSignedIn = await coffer(['ls'], { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'nobody') })
      assert.equal(notSignedIn.code, 3)
      assert.match(notSignedIn.stderr, /coffer login/)
      const help = await coffer(['upload', '--help'], scriptEnv)
      assert.equal(help.code, 0)
      assert.match(help.stdout, /Examples:\n {2}coffer upload report\.pdf/)
      // The completion script, as bash runs it on Tab: the words offered after what was typed.
      const completion = await coffer(['completion', 'bash'], scriptEnv)
      const script = path.join(dir, 'completion.bash')
      await writeFile(script, completion.stdout)
      const offered = async (...words: string[]) =>
        (
          await run('bash', [
            '-c',
            `source ${quote(script)}; COMP_WORDS=(${words.map(quote).join(' ')}); COMP_CWORD=${words.length - 1}; _coffer; echo "\${COMPREPLY[*]}"`,
          ])
        ).stdout.trim()
      assert.equal(await offered('coffer', 'up'), 'upload')
      assert.equal(await offered('coffer', 'request', ''), 'create list submissions --help')
      assert.equal(await offered('coffer', '--json', 'share', '--ex'), '--expires')
    })
  })
}
