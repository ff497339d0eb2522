// Where `coffer login` keeps its credentials: $XDG_CONFIG_HOME/coffer/credentials.json (~/.config when unset),
// readable by the user alone (a directory of mode 700, a file of mode 600, written whole or not at all). Several
// servers, each under a name; one is current. COFFER_URL and COFFER_TOKEN (an API key or an access token)
// stand in for the file, for scripts and CI.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import path from 'node:path'
import { lock } from 'proper-lockfile'
import { CofferError, type Credentials, type OAuthTokens } from '../sdk/index.ts'
import { UsageError } from './output.ts'

export interface Profile {
  url: string
  apiKey?: string
  oauth?: { clientId: string; tokens: OAuthTokens }
}

interface ProfilesFile {
  current?: string
  servers: Record<string, Profile>
}

export const DEFAULT_PROFILE = 'default'

export function configDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.XDG_CONFIG_HOME || path.join(homedir(), '.config'), 'coffer')
}

export class Profiles {
  readonly file: string

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.file = path.join(configDirectory(env), 'credentials.json')
  }

  async #read(): Promise<ProfilesFile> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as ProfilesFile
      return { current: parsed.current, servers: parsed.servers ?? {} }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} }
      throw error
    }
  }

  async #write(contents: ProfilesFile): Promise<void> {
    const directory = path.dirname(this.file)
    await mkdir(directory, { recursive: true, mode: 0o700 })
    const temporary = `${this.file}.${process.pid}.tmp`
    await writeFile(temporary, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600 })
    await chmod(temporary, 0o600)
    await rename(temporary, this.file)
  }

  /** The profile `name`, or the current one. */
  async get(name?: string): Promise<{ name: string; profile: Profile } | undefined> {
    const contents = await this.#read()
    const chosen = name ?? contents.current ?? DEFAULT_PROFILE
    const profile = contents.servers[chosen]
    return profile && { name: chosen, profile }
  }

  /** Saves `profile` under `name` and makes it the current one. */
  async save(name: string, profile: Profile): Promise<void> {
    const contents = await this.#read()
    contents.servers[name] = profile
    contents.current = name
    await this.#write(contents)
  }

  /** Replaces the OAuth tokens of `name` (they rotate with every refresh). */
  async saveTokens(name: string, tokens: OAuthTokens): Promise<void> {
    const contents = await this.#read()
    const profile = contents.servers[name]
    if (!profile?.oauth) return
    profile.oauth.tokens = tokens
    await this.#write(contents)
  }

  /**
   * Runs `work` holding the credentials' lock (proper-lockfile: a directory beside the file, taken over when
   * its holder has not touched it for 10 s, so a killed process does not keep it). `coffer` processes refresh
   * their shared tokens under it one at a time.
   */
  async locked<T>(work: () => Promise<T>): Promise<T> {
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 })
    const started = Date.now()
    const release = await lock(this.file, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 200, minTimeout: 25, maxTimeout: 250 },
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ELOCKED') throw error
      // Held all this time by a process that is alive: a stale lock would have been taken over.
      const seconds = Math.round((Date.now() - started) / 1000)
      throw new CofferError(
        0,
        'credentials_busy',
        `Another coffer command has held the lock on ${this.file} for ${seconds} s, refreshing the login.`,
        'Wait for it to finish (or stop it), then run this command again.',
      )
    })
    try {
      return await work()
    } finally {
      await release()
    }
  }

  async remove(name: string): Promise<void> {
    const contents = await this.#read()
    delete contents.servers[name]
    if (contents.current === name) contents.current = Object.keys(contents.servers)[0]
    await this.#write(contents)
  }
}

/** What a command connects with: COFFER_URL and COFFER_TOKEN, else the profile. */
export async function connection(
  profiles: Profiles,
  name: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; credentials: Credentials; profileName?: string } | undefined> {
  const found = await profiles.get(name)
  const url = env.COFFER_URL || found?.profile.url
  if (env.COFFER_TOKEN && url) return { url, credentials: { apiKey: env.COFFER_TOKEN } }
  if (!found || !url) return undefined
  const { profile } = found
  if (profile.apiKey) return { url, credentials: { apiKey: profile.apiKey }, profileName: found.name }
  if (profile.oauth) {
    const credentials: Credentials = {
      oauth: {
        clientId: profile.oauth.clientId,
        tokens: profile.oauth.tokens,
        onRefresh: (tokens) => profiles.saveTokens(found.name, tokens),
        // Several coffer commands may run at once on one login: one refresh at a time, each seeing the last.
        shared: {
          lock: (work) => profiles.locked(work),
          load: async () => (await profiles.get(found.name))?.profile.oauth?.tokens,
        },
      },
    }
    return { url, credentials, profileName: found.name }
  }
  return undefined
}

/** A server's address as the profiles keep it: its origin and path, without `/api/v1`. */
export function serverUrl(input: string): string {
  let url: URL
  try {
    url = new URL(/^https?:\/\//i.test(input) ? input : `https://${input}`)
  } catch {
    throw new UsageError(
      `${input} is not a server address.`,
      'Give the address of your Coffer server: coffer login https://files.example.com',
    )
  }
  return url.origin + url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')
}
