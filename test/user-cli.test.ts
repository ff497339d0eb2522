// The coffer command as a person and a script use it, against a real server on both engines: signed in by the
// device flow in a terminal (tmux) with the approval made in Chromium, a directory uploaded with its progress
// bars seen on the captured screen, a link shared, a download killed and resumed, --json outputs parsed, and
// the exit codes; the trash (rm into it, ls, restore, rm for good, empty with its question at a terminal).
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { barLine } from '../src/clients/coffer-cli/progress.ts'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { formatSize } from '../src/platform/format-size.shared.ts'
import { browserMissing, launchBrowser, newContext } from './support/browser.ts'
import { COFFER_MAIN as MAIN, runCoffer } from './support/coffer-command.ts'
import { createAccount, createFile, ENGINES } from './support/harness.ts'
import { consent, signInIfAsked } from './support/oauth.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '..')
const PASSWORD = 'correct horse battery staple'
const tmuxMissing = (await run('tmux', ['-V']).then(
  () => false,
  () => true,
))
  ? 'tmux is not installed (apt-get install tmux)'
  : false

/** A terminal of 120 × 30 in tmux, running `command`; its screen is read with `screen()`. */
class Terminal {
  readonly name = `coffer-${randomBytes(4).toString('hex')}`
  readonly columns: number

  constructor(columns = 120) {
    this.columns = columns
  }

  async start(command: string): Promise<void> {
    await run('tmux', ['new-session', '-d', '-s', this.name, '-x', String(this.columns), '-y', '30', command])
  }

  async screen(): Promise<string> {
    return (await run('tmux', ['capture-pane', '-p', '-t', this.name])).stdout
  }

  /** The screen with the lines the terminal wrapped joined again: what a person copies. */
  async joined(): Promise<string> {
    return (await run('tmux', ['capture-pane', '-p', '-J', '-t', this.name])).stdout
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

test("a bar's first second shows no speed or time left; a resumed download's speed is of this run's bytes", () => {
  const options = {
    barsize: 10,
    barCompleteString: '█'.repeat(10),
    barIncompleteString: '░'.repeat(10),
    barGlue: '',
  } as never
  const line = (value: number, total: number, ms: number, from = 0, eta = 99) =>
    barLine(options, { progress: value / total, value, total, startTime: Date.now() - ms, eta } as never, {
      name: 'big.bin',
      from,
    })
  // The first frame had said "23 bytes/s  1466h47m left".
  assert.doesNotMatch(line(23, 1_000_000_000, 5), /\/s|left/)
  assert.match(line(2_000_000, 1_000_000_000, 2000), /2 MB of 1 GB {2}1 MB\/s {2}1m39s left$/)
  // Resumed at 900 MB, 2 MB in 2 s: 1 MB/s, not the 451 MB/s the whole file over 2 s would be.
  assert.match(line(902_000_000, 1_000_000_000, 2000, 900_000_000), / 1 MB\/s {2}/)
  assert.match(line(1_000_000_000, 1_000_000_000, 2000), /100% {2}1 GB of 1 GB {2}done$/)
})

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
        const address = /or open (\S+)/.exec(asked)?.[1] as string
        const complete = /the code is filled in\):\s+(\S+)/.exec(asked)?.[1] as string
        assert.equal(address, `${ctx.base}/oauth/device`)
        assert.equal(new URL(complete).searchParams.get('user_code'), code)
        assert.match(asked, /Waiting for you to approve \(the code works for 10 minutes\)/)
        // The link with the code filled in, followed as far as the consent page, then left there.
        const left = await (await newContext(browser)).newPage()
        await left.goto(complete)
        await left.getByText(code).waitFor()
        await left.getByRole('button', { name: 'Continue' }).click()
        await signInIfAsked(left, email, PASSWORD)
        await left.waitForURL(/\/oauth\/interaction\//)
        await left.context().close()
        // The same code, entered again by hand, goes on: a page closed before Allow does not spend it.
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
      const listed = await runCoffer(['--json', 'ls'], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.deepEqual(JSON.parse(listed.stdout), [])

      // Three commands at once with an expired access token: one refresh under the credentials' lock, the others
      // take its tokens. Each refreshing on its own would spend the same refresh token three times, and the
      // server ends a grant whose refresh token is used twice.
      const expired = structuredClone(saved)
      expired.servers.default.oauth.tokens.expiresAt = 0
      await writeFile(file, JSON.stringify(expired))
      const together = await Promise.all([1, 2, 3].map(() => runCoffer(['--json', 'ls'], env)))
      assert.deepEqual(
        together.map((result) => [result.code, result.stderr]),
        [1, 2, 3].map(() => [0, '']),
      )
      const rotated = JSON.parse(await readFile(file, 'utf8')).servers.default.oauth.tokens
      assert.notEqual(rotated.refreshToken, saved.servers.default.oauth.tokens.refreshToken)
      assert.ok(rotated.expiresAt > Date.now())
      assert.equal((await runCoffer(['ls'], env)).code, 0, 'the grant lives on')

      const accessToken = rotated.accessToken
      const out = await runCoffer(['logout'], env)
      assert.equal(out.code, 0, out.stderr)
      const refused = await fetch(`${ctx.base}/api/v1/files`, {
        headers: { authorization: `Bearer ${accessToken}` },
      })
      assert.equal(refused.status, 401)
      assert.equal((await runCoffer(['ls'], env)).code, 3, 'signed out')
    })

    test('login denied in the browser: the command stops at once and says so', {
      skip: browserMissing || tmuxMissing,
    }, async () => {
      const email = `cli-denied-${engine}@example.com`
      await ctx.app.services.accounts.create({ email, password: PASSWORD })
      const terminal = new Terminal()
      const config = path.join(dir, 'denied-config')
      await terminal.start(
        `HOME=${quote(dir)} XDG_CONFIG_HOME=${quote(config)} ${quote(process.execPath)} ${quote(MAIN)} login ${ctx.base} --no-browser; echo EXIT=$?; sleep 30`,
      )
      const browser = await launchBrowser()
      try {
        const asked = await terminal.waitFor((screen) => /the code is filled in\):\s+\S+/.test(screen))
        const complete = /the code is filled in\):\s+(\S+)/.exec(asked)?.[1] as string
        const page = await (await newContext(browser)).newPage()
        await page.goto(complete)
        await page.getByRole('button', { name: 'Continue' }).click()
        await signInIfAsked(page, email, PASSWORD)
        await page.waitForURL(/\/oauth\/interaction\//)
        await page.getByRole('button', { name: 'Deny' }).click()
        const done = await terminal.waitFor((screen) => screen.includes('EXIT='))
        assert.match(done, /The sign-in was denied in the browser\./)
        assert.match(done, /Run `coffer login` again/)
        assert.match(done, /EXIT=3/)
      } finally {
        await browser.close()
        await terminal.stop()
      }
      await assert.rejects(stat(path.join(config, 'coffer', 'credentials.json')), 'nothing saved')
    })

    test('upload a directory with progress bars, share, list, move, download resumed after a kill', {
      skip: tmuxMissing,
    }, async () => {
      const account = await createAccount(ctx.app)
      const key = await runCoffer(['login', ctx.base, '--with-key'], env, `${account.token}\n`)
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
        // The sizes from the first frame; the speed and the time left only after a second (the bar's line is
        // tested above), which a fast run may never reach.
        assert.match(drawing, new RegExp(`Total\\s+[█░]+\\s+\\d+%\\s+[\\d.,]+ \\S+ of ${total}`))
        const done = await terminal.waitFor((screen) => screen.includes('EXIT='), 60_000)
        assert.match(done, /EXIT=0/)
        for (const name of ['big.bin', 'inner/notes.txt', 'inner/second.bin']) {
          assert.match(done, new RegExp(`fil_\\w+  ${tree}/${name}  `))
        }
        // What a sub-directory's files become is said, one line each, before they go.
        for (const name of ['notes.txt', 'second.bin']) {
          assert.match(done, new RegExp(`${tree}/inner/${name} goes in as ${name}: folders do not nest`))
        }
        assert.match(done, new RegExp(`Total ${total} of ${total} in [\\d.]+ s \\([\\d.,]+ \\S+/s\\)`))
      } finally {
        await terminal.stop()
      }

      // Without a terminal, results only; --json for scripts.
      const listed = await runCoffer(['--json', 'ls', '--folder', 'Trees'], env)
      assert.equal(listed.code, 0, listed.stderr)
      const files = JSON.parse(listed.stdout) as { id: string; name: string; size: number }[]
      assert.deepEqual(files.map((f) => f.name).sort(), ['big.bin', 'notes.txt', 'second.bin'])
      const human = await runCoffer(['ls', '--query', 'NOTES'], env)
      assert.match(human.stdout, /^ID\s+SIZE\s+ADDED\s+LINK\s+NAME\nfil_\w+ .* notes\.txt\n$/)
      assert.match(human.stdout, /notes\.txt/)
      assert.doesNotMatch(human.stdout, /big\.bin/)

      const shared = await runCoffer(['--json', 'share', 'notes.txt', '--expires', '7d'], env)
      assert.equal(shared.code, 0, shared.stderr)
      const share = JSON.parse(shared.stdout)
      assert.ok(Date.parse(share.expiresAt) > Date.now() + 6 * 86_400_000)
      assert.equal((await fetch(share.publicUrl)).status, 200)
      assert.equal((await runCoffer(['share', 'notes.txt'], env)).stdout.trim(), share.publicUrl)
      const moved = await runCoffer(['--json', 'mv', 'notes.txt', '--name', 'todo.txt', '--root'], env)
      assert.deepEqual([JSON.parse(moved.stdout).name, JSON.parse(moved.stdout).folderId], ['todo.txt', null])
      // The link's state (share-state.ts) is the LINK column.
      assert.match((await runCoffer(['ls', '--query', 'todo'], env)).stdout, /\sactive\s+todo\.txt\n$/)
      assert.equal((await runCoffer(['unshare', 'todo.txt'], env)).code, 0)
      assert.equal((await fetch(share.publicUrl)).status, 410, 'a link turned off is gone')
      assert.match((await runCoffer(['ls', '--query', 'todo'], env)).stdout, /\sdisabled\s+todo\.txt\n$/)

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
      const resumed = await runCoffer(['--json', 'download', bigFile.id, '-o', target], env)
      assert.equal(resumed.code, 0, resumed.stderr)
      assert.equal(JSON.parse(resumed.stdout).resumedFrom, had)
      assert.ok((await readFile(target)).equals(big), 'the bytes, whole')
      await assert.rejects(stat(partial))

      const request = await runCoffer(
        ['--json', 'request', 'create', '--title', 'Receipts', '--max-files', '3'],
        env,
      )
      assert.equal(request.code, 0, request.stderr)
      const created = JSON.parse(request.stdout)
      assert.equal((await fetch(created.publicUrl)).status, 200)
      assert.match(
        (await runCoffer(['request', 'list'], env)).stdout,
        new RegExp(`^ID\\s+STATE\\s+FILES\\s+TITLE\\n${created.id}\\s+open\\s+0\\s+Receipts\\n`),
      )
      const submissions = await runCoffer(['--json', 'request', 'submissions', created.id], env)
      assert.deepEqual(JSON.parse(submissions.stdout), [])
      const stats = await runCoffer(['--json', 'stats', '--days', '7'], env)
      assert.equal(JSON.parse(stats.stdout).daily.days.length, 7)
      // For people, the days that had any views or downloads; the share link above had one of each today.
      const perDay = (await runCoffer(['stats', '--days', '7'], env)).stdout
      const today = new Date().toISOString().slice(0, 10)
      assert.match(
        perDay,
        new RegExp(
          `^Storage: .* used, no quota\\nFiles: \\d+.*\\nViews \\d+, downloads \\d+, active links \\d+\\nDAY\\s+VIEWS\\s+DOWNLOADS\\n${today}\\s+\\d+\\s+\\d+\\n$`,
        ),
      )

      const removed = await runCoffer(['--json', 'rm', 'todo.txt', bigFile.id], env)
      assert.equal(JSON.parse(removed.stdout).deletedIds.length, 2)
    })

    test('upload --share at 60, 80 and 120 columns: every link printed whole, above bars cut to the width', {
      skip: tmuxMissing,
    }, async () => {
      const account = await createAccount(ctx.app)
      const files = path.join(dir, 'to-share')
      await mkdir(files, { recursive: true })
      await writeFile(path.join(files, 'a-rather-long-name-for-notes.txt'), 'seven b')
      await writeFile(path.join(files, 'big.bin'), randomBytes(24 * 1024 * 1024))
      const shellEnv = `HOME=${quote(dir)} XDG_CONFIG_HOME=${quote(path.join(dir, 'empty'))} COFFER_URL=${quote(ctx.base)} COFFER_TOKEN=${quote(account.token)}`
      for (const columns of [60, 80, 120]) {
        const terminal = new Terminal(columns)
        await terminal.start(
          `${shellEnv} ${quote(process.execPath)} ${quote(MAIN)} upload ${quote(files)} --share; echo EXIT=$?; sleep 30`,
        )
        try {
          const drawing = await terminal.waitFor(
            (screen) => /big\.bin.*[█░]/.test(screen) || screen.includes('EXIT='),
          )
          for (const line of drawing.split('\n'))
            assert.ok(line.length <= columns, `a line wider than ${columns}: ${line}`)
          await terminal.waitFor((screen) => screen.includes('EXIT='), 60_000)
          const joined = await terminal.joined()
          assert.match(joined, /EXIT=0/)
          const links = [...joined.matchAll(/^fil_\w+ {2}\S+ {2}[\d.]+ \S+ {2}(\S+)$/gm)].map(
            (match) => match[1],
          )
          assert.equal(
            links.length,
            2,
            `two results, each on its own lines, at ${columns} columns:\n${joined}`,
          )
          for (const link of links) {
            assert.match(link as string, /\/s\/[0-9a-z]{32}$/, `a whole link at ${columns} columns`)
            assert.equal((await fetch(link as string)).status, 200)
          }
        } finally {
          await terminal.stop()
        }
      }
    })

    test('folders are named as the server compares them, ignoring case: --folder scans is the folder Scans', async () => {
      const account = await createAccount(ctx.app)
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      const scans = await ctx.app.services.folders.create(account.id, 'Scans')
      const note = path.join(dir, 'scan-001.txt')
      await writeFile(note, 'scanned')
      const uploaded = await runCoffer(['--json', 'upload', note, '--folder', 'scans'], scriptEnv)
      assert.equal(uploaded.code, 0, uploaded.stdout + uploaded.stderr)
      const listed = await runCoffer(['--json', 'ls', '--folder', 'SCANS'], scriptEnv)
      assert.deepEqual(
        (JSON.parse(listed.stdout) as { name: string; folderId: string }[]).map((f) => [f.name, f.folderId]),
        [['scan-001.txt', scans.id]],
      )
      // An account without views or downloads gets one line, not a table of zeros.
      const stats = await runCoffer(['stats'], scriptEnv)
      assert.equal(
        stats.stdout,
        'Storage: 7 bytes used, no quota\nFiles: 1\nViews 0, downloads 0, active links 0\nNo views or downloads in the last 30 days.\n',
      )
    })

    test("ls --sort: the API's orders, a usage error for another or with a search", async () => {
      const account = await createAccount(ctx.app)
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      for (const [name, content] of [
        ['b.txt', 'bb'],
        ['C.txt', 'c'],
        ['a.txt', 'aaa'],
      ] as const) {
        await createFile(ctx, account.id, { name, content })
      }
      const names = async (...args: string[]) => {
        const run = await runCoffer(['--json', 'ls', ...args], scriptEnv)
        assert.equal(run.code, 0, run.stderr)
        return (JSON.parse(run.stdout) as { name: string }[]).map((f) => f.name)
      }
      assert.deepEqual(await names(), ['a.txt', 'C.txt', 'b.txt'], 'newest first')
      assert.deepEqual(await names('--sort', 'name'), ['a.txt', 'b.txt', 'C.txt'])
      assert.deepEqual(await names('--sort', 'largest'), ['a.txt', 'b.txt', 'C.txt'])
      assert.deepEqual(await names('--sort', 'oldest', '--limit', '2'), ['b.txt', 'C.txt'])
      const other = await runCoffer(['ls', '--sort', 'random'], scriptEnv)
      assert.equal(other.code, 2)
      assert.match(other.stderr, /Allowed choices are newest, oldest, name, name-desc, largest, smallest/)
      const searched = await runCoffer(['ls', '--query', 'a', '--sort', 'name'], scriptEnv)
      assert.equal(searched.code, 2)
      assert.match(searched.stderr, /A search comes newest first/)
    })

    test('share: a link that exists takes the settings given, --no-… clears them, one that does not open fails', async () => {
      const account = await createAccount(ctx.app)
      const file = await createFile(ctx, account.id, { name: 'plan.txt' })
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      const share = async (args: string[], stdin?: string) => {
        const result = await runCoffer(['--json', 'share', 'plan.txt', ...args], scriptEnv, stdin)
        return { ...result, link: result.code === 2 ? undefined : JSON.parse(result.stdout) }
      }
      const first = await share([])
      assert.equal(first.code, 0, first.stderr)
      assert.deepEqual(
        [first.link.state, first.link.hasPassword, first.link.expiresAt],
        ['active', false, null],
      )
      // Each setting given to the link that is on changes it; those not given stay.
      const locked = await share(['--password'], 'a long passphrase\n')
      assert.equal(locked.code, 0, locked.stderr)
      assert.equal(locked.link.id, first.link.id)
      assert.equal(locked.link.hasPassword, true)
      const limited = await share(['--max-downloads', '5', '--expires', '1d'])
      assert.deepEqual(
        [
          limited.link.hasPassword,
          limited.link.maxDownloads,
          Date.parse(limited.link.expiresAt) > Date.now(),
        ],
        [true, 5, true],
      )
      const cleared = await share(['--no-password', '--no-expiry', '--no-limit'])
      assert.equal(cleared.code, 0, cleared.stderr)
      assert.deepEqual(
        [cleared.link.hasPassword, cleared.link.maxDownloads, cleared.link.expiresAt, cleared.link.state],
        [false, null, null, 'active'],
      )
      // A limit below the downloads so far is set, and said: the link does not open.
      await ctx.app.inject({ method: 'GET', url: `${new URL(first.link.publicUrl).pathname}/download` })
      const exhausted = await share(['--max-downloads', '1'])
      assert.equal(exhausted.code, 1)
      assert.equal(exhausted.link.state, 'exhausted')
      assert.match(exhausted.stderr, /The link does not open: it is exhausted\..*--no-limit/)
      // Contradictions are usage errors, and change nothing.
      const both = await share(['--expires', '7d', '--no-expiry'])
      assert.equal(both.code, 2)
      assert.match(JSON.parse(both.stdout).error.message, /--expires or --no-expiry, not both/)
      assert.equal((await ctx.app.services.files.get(account.id, file.id)).share?.expiresAt, null)
    })

    test("share --folder NAME: a link whose page lists the folder's files; settings as a file's; unshare --folder; unknown folders fail", async () => {
      const account = await createAccount(ctx.app)
      const minutes = await ctx.app.services.folders.create(account.id, 'Minutes')
      await createFile(ctx, account.id, { name: 'march.txt', folderId: minutes.id })
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      // Named in another case, as the server compares folder names; printed for people as a file's link is.
      const plain = await runCoffer(['share', '--folder', 'minutes'], scriptEnv)
      assert.equal(plain.code, 0, plain.stderr)
      const publicUrl = plain.stdout.trim()
      assert.match(publicUrl, /\/sf\/[^/]+$/)
      const page = await fetch(publicUrl)
      assert.equal(page.status, 200)
      assert.match(await page.text(), /march\.txt/)

      const share = async (args: string[], stdin?: string) => {
        const result = await runCoffer(['--json', 'share', '--folder', 'Minutes', ...args], scriptEnv, stdin)
        return { ...result, link: result.code === 2 ? undefined : JSON.parse(result.stdout) }
      }
      const locked = await share(['--password', '--max-downloads', '5'], 'a long passphrase\n')
      assert.equal(locked.code, 0, locked.stderr)
      assert.deepEqual(
        [locked.link.publicUrl, locked.link.folderId, locked.link.hasPassword, locked.link.maxDownloads],
        [publicUrl, minutes.id, true, 5],
      )
      const asked = await fetch(publicUrl)
      assert.equal(asked.status, 200)
      const askedPage = await asked.text()
      assert.match(askedPage, /This link is protected/)
      assert.doesNotMatch(askedPage, /march\.txt/)
      const dated = await share(['--expires', '1d'])
      assert.deepEqual(
        [dated.link.hasPassword, dated.link.maxDownloads, Date.parse(dated.link.expiresAt) > Date.now()],
        [true, 5, true],
      )
      const cleared = await share(['--no-password', '--no-expiry', '--no-limit'])
      assert.equal(cleared.code, 0, cleared.stderr)
      assert.deepEqual(
        [cleared.link.hasPassword, cleared.link.maxDownloads, cleared.link.expiresAt, cleared.link.state],
        [false, null, null, 'active'],
      )
      // A limit below the downloads so far (Download all counts one): set, said, exit 1.
      await ctx.app.inject({ method: 'GET', url: `${new URL(publicUrl).pathname}/zip` })
      const exhausted = await share(['--max-downloads', '1'])
      assert.equal(exhausted.code, 1)
      assert.equal(exhausted.link.state, 'exhausted')
      assert.match(exhausted.stderr, /The link does not open: it is exhausted\..*--no-limit/)

      // unshare --folder turns it off; the folder is then not shared, which unshare says.
      const off = await runCoffer(['unshare', '--folder', 'MINUTES'], scriptEnv)
      assert.equal(off.code, 0, off.stderr)
      assert.equal(off.stdout.trim(), `Minutes is no longer shared (the link ${publicUrl} is off).`)
      assert.equal((await fetch(publicUrl)).status, 410)
      const empty = await ctx.app.services.folders.create(account.id, 'Empty')
      const notShared = await runCoffer(['unshare', '--folder', 'Empty'], scriptEnv)
      assert.equal(notShared.code, 2)
      assert.match(notShared.stderr, /Empty is not shared\./)
      // share turns it on again, at the same address.
      const again = await share(['--no-limit'])
      assert.deepEqual([again.code, again.link.publicUrl, again.link.state], [0, publicUrl, 'active'])
      assert.equal((await runCoffer(['share', '--folder', empty.id], scriptEnv)).code, 0, 'by its id too')

      // No such folder: the not-found error, exit 1; a file and --folder at once, or neither: usage, exit 2.
      const unknown = await runCoffer(['share', '--folder', 'Nowhere'], scriptEnv)
      assert.equal(unknown.code, 1)
      assert.match(
        unknown.stderr,
        /Error: No folder is named "Nowhere"\.\nHint: See your folders with `coffer folders`\./,
      )
      const unknownJson = await runCoffer(['--json', 'unshare', '--folder', 'Nowhere'], scriptEnv)
      assert.equal(unknownJson.code, 1)
      assert.equal(JSON.parse(unknownJson.stdout).error.code, 'not_found')
      const both = await runCoffer(['share', 'march.txt', '--folder', 'Minutes'], scriptEnv)
      assert.equal(both.code, 2)
      assert.match(both.stderr, /Give a file or --folder, not both\./)
      const neither = await runCoffer(['share'], scriptEnv)
      assert.equal(neither.code, 2)
      assert.match(neither.stderr, /Name a file, or a folder with --folder NAME\./)
    })

    test("upload --on-conflict: a name already there is kept with a word, skipped, or renamed; the run's own clashes too", async () => {
      const account = await createAccount(ctx.app)
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      const docs = await ctx.app.services.folders.create(account.id, 'Docs')
      await createFile(ctx, account.id, { name: 'a.txt', folderId: docs.id })
      // Elsewhere, a file of that name is no clash: only the folder the upload goes to counts.
      await createFile(ctx, account.id, { name: 'b.txt' })
      const tree = path.join(dir, 'conflicts')
      await mkdir(path.join(tree, 'sub'), { recursive: true })
      await writeFile(path.join(tree, 'a.txt'), 'a')
      await writeFile(path.join(tree, 'b.txt'), 'b')
      await writeFile(path.join(tree, 'sub', 'b.txt'), 'sub b')
      const names = async () =>
        (await ctx.app.services.files.list(account.id, { folderId: docs.id, limit: 100 })).items
          .map((f) => f.name)
          .sort()
      const upload = async (...args: string[]) => {
        const result = await runCoffer(['--json', 'upload', tree, '--folder', 'docs', ...args], scriptEnv)
        assert.equal(result.code, 0, result.stdout + result.stderr)
        return { ...result, out: JSON.parse(result.stdout) }
      }

      const skip = await upload('--on-conflict', 'skip')
      assert.deepEqual(
        skip.out.skipped.map((s: { path: string }) => path.relative(tree, s.path)).sort(),
        ['a.txt', 'sub/b.txt'],
        'a.txt is there, and sub/b.txt clashes with the b.txt of the same run',
      )
      assert.match(
        skip.stderr,
        /conflicts\/a\.txt: skipped, a file named a\.txt is already in the folder Docs\./,
      )
      assert.deepEqual(await names(), ['a.txt', 'b.txt'])

      const renamed = await upload('--on-conflict', 'rename', '--parallel', '1')
      assert.deepEqual(await names(), ['a (2).txt', 'a.txt', 'b (2).txt', 'b (3).txt', 'b.txt'])
      assert.match(
        renamed.stderr,
        /conflicts\/a\.txt goes in as a \(2\)\.txt: a file named a\.txt is already in the folder Docs\./,
      )
      assert.deepEqual(skip.out.failed, [])

      const kept = await upload()
      assert.match(
        kept.stderr,
        /conflicts\/a\.txt: a file named a\.txt is already in the folder Docs; both are kept/,
      )
      assert.equal(kept.out.uploaded.length, 3)
      assert.equal((await names()).filter((n) => n === 'a.txt').length, 2)
      const wrong = await runCoffer(['upload', tree, '--on-conflict', 'overwrite'], scriptEnv)
      assert.equal(wrong.code, 2)
      assert.match(wrong.stderr, /Allowed choices are keep-both, skip, rename/)
    })

    test('upload --folder NEW leaves no empty folder when nothing goes in: all failed, or cancelled by Ctrl-C', async () => {
      const account = await createAccount(ctx.app)
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      const folders = async () =>
        (await ctx.app.services.folders.list(account.id, { limit: 100 })).items.map((f) => f.name)
      const empty = path.join(dir, 'empty.txt')
      await writeFile(empty, '')
      const refused = await runCoffer(['upload', empty, '--folder', 'Never'], scriptEnv)
      assert.equal(refused.code, 1, refused.stderr)
      assert.deepEqual(await folders(), [])

      const big = path.join(dir, 'cancelled.bin')
      await writeFile(big, randomBytes(48 * 1024 * 1024))
      // Without --no-resume, a Ctrl-C leaves the upload (and its folder) to resume: cli-resume.test.ts.
      const child = spawn(process.execPath, [MAIN, 'upload', big, '--folder', 'Cancelled', '--no-resume'], {
        env: { PATH: process.env.PATH ?? '', ...scriptEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (chunk) => (stderr += chunk))
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
      const deadline = Date.now() + 20_000
      while (!(await folders()).includes('Cancelled') && Date.now() < deadline) await sleep(20)
      assert.deepEqual(await folders(), ['Cancelled'], 'the folder is made before the bytes go')
      child.kill('SIGINT')
      assert.equal(await exited, 130, stderr)
      assert.match(stderr, /Cancelled: 0 of 1 files uploaded/)
      assert.deepEqual(await folders(), [], 'the folder it made is gone with the cancelled upload')
      // A folder that was there before is left as it was.
      await ctx.app.services.folders.create(account.id, 'Kept')
      const again = await runCoffer(['upload', empty, '--folder', 'kept'], scriptEnv)
      assert.equal(again.code, 1)
      assert.deepEqual(await folders(), ['Kept'])
    })

    test('rm moves files to the trash and says for how long; trash ls, restore, rm for good, empty --yes; by name or id', async () => {
      const account = await createAccount(ctx.app)
      const scriptEnv = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'empty'),
        COFFER_URL: ctx.base,
        COFFER_TOKEN: account.token,
      }
      const work = await ctx.app.services.folders.create(account.id, 'Work')
      const report = await createFile(ctx, account.id, { name: 'report.pdf', folderId: work.id })
      const notes = await createFile(ctx, account.id, { name: 'my notes.txt' })
      const photo = await createFile(ctx, account.id, { name: 'photo.jpg' })
      const twin = await createFile(ctx, account.id, { name: 'photo.jpg' })
      const ok = async (args: string[]) => {
        const result = await runCoffer(args, scriptEnv)
        assert.equal(result.code, 0, result.stdout + result.stderr)
        return result.stdout
      }

      assert.equal(
        await ok(['rm', 'report.pdf']),
        `Moved report.pdf (${report.id}) to the trash.\nIt can be restored for 30 days with \`coffer trash restore report.pdf\`.\n`,
      )
      assert.equal(
        await ok(['rm', 'my notes.txt', photo.id]),
        `Moved my notes.txt (${notes.id}) to the trash.\nMoved photo.jpg (${photo.id}) to the trash.\n` +
          'They can be restored for 30 days with `coffer trash restore <name or id>...`.\n',
      )
      assert.deepEqual(JSON.parse(await ok(['--json', 'rm', twin.id])), {
        deletedIds: [twin.id],
        retentionDays: 30,
      })
      assert.equal(await ok(['ls']), 'No files.\n')

      // The table as `coffer ls` draws it, the most recently deleted first.
      const table = (await ok(['trash', 'ls'])).trimEnd().split('\n')
      assert.match(table[0] ?? '', /^ID +SIZE +DELETED +PURGE DATE +NAME$/)
      assert.deepEqual(
        table.slice(1).map((row) => row.split(/ {2,}/).at(-1)),
        ['photo.jpg', 'photo.jpg', 'my notes.txt', 'report.pdf'],
      )
      assert.match(
        table[4] ?? '',
        new RegExp(
          `^${report.id} .+ \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  report\\.pdf$`,
        ),
      )
      const listed = JSON.parse(await ok(['--json', 'trash', 'ls'])) as {
        id: string
        deletedAt: string
        purgeAt: string
      }[]
      assert.equal(listed.length, 4)
      for (const file of listed) {
        assert.equal(Date.parse(file.purgeAt) - Date.parse(file.deletedAt), 30 * 86_400_000)
      }
      assert.equal(JSON.parse(await ok(['--json', 'trash', 'ls', '--limit', '1'])).length, 1)

      // A name two files in the trash have is a usage error that gives their ids; nothing is restored.
      const ambiguous = await runCoffer(['trash', 'restore', 'report.pdf', 'photo.jpg'], scriptEnv)
      assert.equal(ambiguous.code, 2)
      assert.match(ambiguous.stderr, /2 files in the trash are named "photo\.jpg"/)
      assert.match(ambiguous.stderr, new RegExp(`${twin.id} \\(deleted .+\\), ${photo.id}`))
      assert.equal(JSON.parse(await ok(['--json', 'trash', 'ls'])).length, 4)

      assert.equal(
        await ok(['trash', 'restore', 'my notes.txt', report.id]),
        `Restored my notes.txt (${notes.id})\nRestored report.pdf in Work (${report.id})\n`,
      )
      assert.equal((await ctx.app.services.files.get(account.id, report.id)).folderId, work.id)
      const missing = await runCoffer(['--json', 'trash', 'restore', 'report.pdf'], scriptEnv)
      assert.deepEqual([missing.code, JSON.parse(missing.stdout).error.code], [1, 'not_found'])
      const human = await runCoffer(['trash', 'restore', 'nothing.txt'], scriptEnv)
      assert.equal(human.code, 1)
      assert.equal(
        human.stderr,
        'Error: No file in the trash is named "nothing.txt".\nHint: See what the trash holds with `coffer trash ls`.\n',
      )

      assert.equal(await ok(['trash', 'rm', photo.id]), `Deleted photo.jpg (${photo.id}) for good.\n`)
      assert.deepEqual(JSON.parse(await ok(['--json', 'trash', 'rm', 'photo.jpg'])), {
        deletedIds: [twin.id],
      })
      await createFile(ctx, account.id, { name: 'old.txt' }).then((f) => ok(['rm', f.id]))

      // Emptying asks first; with no terminal to ask at, only --yes goes ahead.
      const unasked = await runCoffer(['trash', 'empty'], scriptEnv)
      assert.equal(unasked.code, 2)
      assert.match(unasked.stderr, /no terminal to ask at\.\nHint: Add --yes to go ahead\./)
      assert.deepEqual(JSON.parse(await ok(['--json', 'trash', 'empty', '--yes'])), { deletedCount: 1 })
      assert.equal(await ok(['trash', 'empty', '--yes']), 'The trash is empty.\n')
      assert.equal(await ok(['trash', 'empty']), 'The trash is empty.\n', 'nothing to ask about')
      assert.equal(await ok(['trash', 'ls']), 'The trash is empty.\n')
      assert.deepEqual(
        (await ctx.app.services.files.list(account.id, { limit: 100 })).items.map((f) => f.name).sort(),
        ['my notes.txt', 'report.pdf'],
      )
    })

    test('trash empty at a terminal: no keeps the files, Ctrl-C cancels, yes deletes them for good', {
      skip: tmuxMissing,
    }, async () => {
      const account = await createAccount(ctx.app)
      for (const name of ['a.txt', 'b.txt']) {
        const file = await createFile(ctx, account.id, { name })
        await ctx.app.services.trash.discard(account.id, [file.id], ctx.app.log)
      }
      const shellEnv = Object.entries({ ...env, COFFER_URL: ctx.base, COFFER_TOKEN: account.token })
        .map(([name, value]) => `${name}=${quote(value)}`)
        .join(' ')
      const empty = `${shellEnv} ${quote(process.execPath)} ${quote(MAIN)} trash empty`
      const terminal = new Terminal()
      await terminal.start(
        `${empty}; echo FIRST=$?; ${empty}; echo SECOND=$?; ${empty}; echo THIRD=$?; sleep 30`,
      )
      const type = (...keys: string[]) => run('tmux', ['send-keys', '-t', terminal.name, ...keys])
      const question = 'Delete 2 files in the trash for good? They cannot be restored. [y/N]'
      try {
        await terminal.waitFor((screen) => screen.includes(question))
        await type('n', 'Enter')
        const kept = await terminal.waitFor((screen) => screen.includes('FIRST='))
        assert.match(kept, /\[y\/N\] n\nNothing was deleted\.\nFIRST=1\n/)
        await terminal.waitFor((screen) => screen.split(question).length === 3)
        await type('C-c')
        const cancelled = await terminal.waitFor((screen) => screen.includes('SECOND='))
        assert.match(cancelled, /\[y\/N\]\nError: Cancelled: nothing was changed\.\nSECOND=130\n/)
        await terminal.waitFor((screen) => screen.split(question).length === 4)
        assert.equal((await ctx.app.services.trash.list(account.id, { limit: 10 })).items.length, 2)
        await type('y', 'Enter')
        const done = await terminal.waitFor((screen) => screen.includes('THIRD='))
        assert.match(done, /\[y\/N\] y\nDeleted 2 files for good\.\nTHIRD=0\n/)
      } finally {
        await terminal.stop()
      }
      assert.equal((await ctx.app.services.trash.list(account.id, { limit: 10 })).items.length, 0)
    })

    test('exit codes: 2 for usage, 3 for a refused credential, 1 for a failure, each with a hint', async () => {
      const scriptEnv = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'empty'), COFFER_URL: ctx.base }
      const usage = await runCoffer(['ls', '--bogus'], scriptEnv)
      assert.equal(usage.code, 2)
      assert.match(usage.stderr, /unknown option '--bogus'/)
      const stranger = await runCoffer(['--json', 'ls'], {
        ...scriptEnv,
        COFFER_TOKEN: `coffer_${'x'.repeat(43)}`,
      })
      assert.equal(stranger.code, 3)
      assert.equal(JSON.parse(stranger.stdout).error.code, 'unauthorized')
      const account = await createAccount(ctx.app)
      const readOnly = await account.key(['files:read'])
      const missing = await runCoffer(['download', 'fil_0000000000000000000000000'], {
        ...scriptEnv,
        COFFER_TOKEN: readOnly,
      })
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /^Error: .+\nHint: .+/)
      const unknown = await runCoffer(['--json', 'share', 'x.txt'], { ...scriptEnv, COFFER_TOKEN: readOnly })
      assert.deepEqual([unknown.code, JSON.parse(unknown.stdout).error.code], [1, 'not_found'])
      const file = await runCoffer(['upload', path.join(ROOT, 'package.json')], {
        ...scriptEnv,
        COFFER_TOKEN: readOnly,
      })
      assert.equal(file.code, 3, 'uploading needs files:write')
      assert.match(file.stderr, /files:write/)
      const notSignedIn = await runCoffer(['ls'], { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'nobody') })
      assert.equal(notSignedIn.code, 3)
      assert.match(notSignedIn.stderr, /coffer login/)
      const help = await runCoffer(['upload', '--help'], scriptEnv)
      assert.equal(help.code, 0)
      assert.match(help.stdout, /Examples:\n {2}coffer upload report\.pdf/)
      // The completion script, as bash runs it on Tab: the words offered after what was typed.
      const completion = await runCoffer(['completion', 'bash'], scriptEnv)
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
      assert.equal(await offered('coffer', 'trash', ''), 'ls restore rm empty --help')
    })
  })
}

describe('the coffer command, with a server that keeps no trash [sqlite]', () => {
  let ctx: ListeningContext
  let dir: string
  before(async () => {
    ctx = await startListening('sqlite', { env: { TRASH_RETENTION_DAYS: '0' } })
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-'))
  })
  after(async () => {
    await ctx?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('rm says the files are deleted for good; the trash says it keeps none', async () => {
    const account = await createAccount(ctx.app)
    const scriptEnv = {
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'empty'),
      COFFER_URL: ctx.base,
      COFFER_TOKEN: account.token,
    }
    const file = await createFile(ctx, account.id, { name: 'final.txt' })
    const removed = await runCoffer(['rm', 'final.txt'], scriptEnv)
    assert.equal(removed.code, 0, removed.stderr)
    assert.equal(removed.stdout, `Deleted final.txt (${file.id}) for good.\n`)
    const listed = await runCoffer(['trash', 'ls'], scriptEnv)
    assert.equal(listed.stdout, 'The trash is empty: this server keeps none (a delete is final).\n')
    const other = await createFile(ctx, account.id, { name: 'other.txt' })
    const json = await runCoffer(['--json', 'rm', other.id], scriptEnv)
    assert.deepEqual(JSON.parse(json.stdout), { deletedIds: [other.id], retentionDays: 0 })
  })
})
