// `coffer upload` resumes (issue 44, 3): run again after a SIGKILL at half of a 1 GiB file, it says so and sends
// only what the server lacks (measured at a TCP proxy in front of the server: at most 55 % of the file), and
// the file made hashes as the one on disk; after a Ctrl-C it says how to resume, and exits 130 with the upload
// kept; --no-resume starts over.
import assert from 'node:assert/strict'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Coffer, type ResumeRecord } from '../src/clients/sdk/index.ts'
import { formatSize } from '../src/platform/format-size.shared.ts'
import { startCoffer } from './support/coffer-command.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import { freePort } from './support/ports.ts'
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts'
import { type ListeningContext, seededStream, sha256Of, startListening } from './support/uploads.ts'

const MiB = 1024 * 1024
const GiB = 1024 * MiB
/** What a run sends beyond the parts' bytes: the requests' heads, the API's calls. */
const OVERHEAD = 256 * 1024

/** The records of unfinished uploads the command keeps (XDG_CONFIG_HOME/coffer/uploads). */
async function records(config: string): Promise<ResumeRecord[]> {
  const dir = path.join(config, 'coffer', 'uploads')
  const names = await readdir(dir).catch(() => [] as string[])
  const found: ResumeRecord[] = []
  for (const name of names.filter((each) => each.endsWith('.json'))) {
    // A record is replaced by a rename: one read is always whole, unless it went meanwhile.
    const text = await readFile(path.join(dir, name), 'utf8').catch(() => undefined)
    if (text) found.push(JSON.parse(text))
  }
  return found
}

const storedIn = (record: ResumeRecord | undefined) =>
  (record?.parts ?? []).reduce((sum, part) => sum + part.size, 0)

/** Waits until the command has kept at least `bytes` stored of one upload. */
async function storedAtLeast(config: string, bytes: number, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + 90_000
  while (storedIn((await records(config))[0]) < bytes) {
    assert.ok(!exited(), 'the upload ended before it was stopped')
    assert.ok(Date.now() < deadline, 'the upload never got that far')
    await sleep(20)
  }
}

for (const engine of ENGINES) {
  describe(`coffer upload resumes [${engine}]`, () => {
    let ctx: ListeningContext
    let proxy: TcpProxy
    let dir: string
    let env: Record<string, string>
    let coffer: Coffer

    before(async () => {
      const proxyPort = await freePort()
      // The command talks to the proxy (PUBLIC_URL names it: the blob API's address too), which counts.
      ctx = await startListening(engine, { env: { PUBLIC_URL: `http://127.0.0.1:${proxyPort}` } })
      proxy = await startTcpProxy(Number(new URL(ctx.base).port), proxyPort)
      const account = await createAccount(ctx.app)
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-resume-'))
      env = {
        HOME: dir,
        XDG_CONFIG_HOME: path.join(dir, 'config'),
        COFFER_URL: `http://127.0.0.1:${proxyPort}`,
        COFFER_TOKEN: account.token,
      }
      // The test's own calls go straight to the server, uncounted.
      coffer = new Coffer({ url: ctx.base, credentials: { apiKey: account.token } })
    })
    after(async () => {
      await proxy?.close()
      await ctx?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    // About 15 s on SQLite and the local disk, 30 s on PostgreSQL and S3 (Ceph): on both.
    test('killed at half of 1 GiB, run again: it says it resumes, sends at most 55 %, and the file is whole', async (t) => {
      const size = GiB
      const file = path.join(dir, 'big.bin')
      const seeded = seededStream(size, 44)
      await pipeline(seeded, createWriteStream(file))
      const digest = seeded.digest()

      proxy.reset()
      const first = startCoffer(['upload', file], env)
      let exited = false
      void first.done.then(() => (exited = true))
      await storedAtLeast(env.XDG_CONFIG_HOME as string, size / 2, () => exited)
      first.child.kill('SIGKILL')
      const killed = await first.done
      assert.equal(killed.signal, 'SIGKILL')
      const sentFirst = proxy.sent
      const [record] = await records(env.XDG_CONFIG_HOME as string)
      assert.ok(record, 'the upload is kept')
      await sleep(200)
      const status = await coffer.files.uploadStatus(record.grant.intentId)
      assert.ok(
        status.status === 'pending' && 'multipart' in status && status.multipart,
        JSON.stringify(status),
      )
      const stored = status.multipart.parts.reduce((sum, part) => sum + part.size, 0)

      proxy.reset()
      const second = await startCoffer(['upload', file], env).done
      const sentSecond = proxy.sent
      t.diagnostic(
        `1 GiB: the first run sent ${sentFirst} bytes and was killed with ${stored} stored (${status.multipart.parts.length} parts); the second sent ${sentSecond} bytes (${((100 * sentSecond) / size).toFixed(1)} % of the file)`,
      )
      assert.equal(second.code, 0, second.stderr)
      assert.match(
        second.stderr,
        new RegExp(
          `big.bin: resuming: ${formatSize(stored)} of ${formatSize(size)} already stored.`.replaceAll(
            '.',
            '\\.',
          ),
        ),
      )
      assert.ok(sentSecond <= 0.55 * size, `${sentSecond} bytes sent the second time`)
      assert.ok(
        sentSecond >= size - stored,
        `${sentSecond} bytes sent, the missing parts hold ${size - stored}`,
      )
      const id = /^(fil_\w+)\s/.exec(second.stdout)?.[1]
      assert.ok(id, second.stdout)
      const made = await coffer.files.download(id)
      assert.equal(
        await sha256Of(made.body as unknown as AsyncIterable<Uint8Array>),
        digest,
        'the same bytes',
      )
      assert.deepEqual(
        await records(env.XDG_CONFIG_HOME as string),
        [],
        'nothing is kept once the file is made',
      )
      assert.equal(await sha256Of(createReadStream(file)), digest)
      await rm(file)
    })

    test('Ctrl-C leaves the upload to resume and says how; --no-resume starts over', async (t) => {
      // Fifteen parts, at most 100 MB/s: stopped once one is stored, the parts of the second round remain.
      const size = 15 * 8 * MiB - 12_345
      proxy.throttle(100_000_000)
      t.after(() => proxy.throttle(undefined))
      const file = path.join(dir, 'medium.bin')
      await pipeline(seededStream(size, 7), createWriteStream(file))
      const config = env.XDG_CONFIG_HOME as string

      const interrupt = async () => {
        const run = startCoffer(['upload', file], env)
        let exited = false
        void run.done.then(() => (exited = true))
        await storedAtLeast(config, 8 * MiB, () => exited)
        run.child.kill('SIGINT')
        return run.done
      }
      const interrupted = await interrupt()
      assert.equal(interrupted.code, 130, interrupted.stderr)
      assert.match(
        interrupted.stderr,
        /Interrupted \(0 of 1 files uploaded\): run the same command again to resume\./,
      )
      const [kept] = await records(config)
      assert.ok(kept, 'the upload is kept')
      assert.equal(
        (await coffer.files.uploadStatus(kept.grant.intentId)).status,
        'pending',
        'and not cancelled',
      )

      proxy.reset()
      const over = await startCoffer(['upload', file, '--no-resume'], env).done
      assert.equal(over.code, 0, over.stderr)
      assert.doesNotMatch(over.stderr, /resuming/)
      const sentOver = proxy.sent
      assert.ok(sentOver >= size, `--no-resume sent ${sentOver} bytes`)
      assert.deepEqual(await records(config), [], '--no-resume drops what was kept, and keeps nothing')

      const again = await interrupt()
      assert.equal(again.code, 130, again.stderr)
      await sleep(200)
      const [record] = await records(config)
      assert.ok(record)
      const status = await coffer.files.uploadStatus(record.grant.intentId)
      assert.ok(
        status.status === 'pending' && 'multipart' in status && status.multipart,
        JSON.stringify(status),
      )
      const stored = status.multipart.parts.reduce((sum, part) => sum + part.size, 0)
      proxy.reset()
      const resumed = await startCoffer(['upload', file], env).done
      const sent = proxy.sent
      t.diagnostic(
        `${size} bytes: --no-resume sent ${sentOver}; after a Ctrl-C with ${stored} stored, the run again sent ${sent}`,
      )
      assert.equal(resumed.code, 0, resumed.stderr)
      assert.match(resumed.stderr, /medium\.bin: resuming: .+ of 125\.8 MB already stored\./)
      assert.ok(sent <= size - stored + OVERHEAD, `${sent} bytes sent again`)
      assert.deepEqual(await records(config), [])
      await writeFile(file, '')
    })
  })
}
