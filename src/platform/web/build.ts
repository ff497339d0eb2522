// The browser's share of Coffer: one stylesheet and a few small ES modules, bundled by esbuild into
// dist/assets/ under content-hashed names (so they can be cached forever), with a gzip and a Brotli copy of
// each, and a manifest that maps every entry to its file. `npm ci` builds them (the `prepare` script); the
// server builds them at start when they are missing or older than their sources, so a fresh clone needs
// nothing more than the README's two commands.
//
//   node src/platform/web/build.ts          builds now (what `prepare` runs)
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const ROOT = path.resolve(import.meta.dirname, '../../..')
export const DIST_DIR = path.join(ROOT, 'dist')
/** What the server serves under ASSETS_PATH: the hashed files and their compressed copies. */
export const ASSETS_DIR = path.join(DIST_DIR, 'assets')
const MANIFEST = path.join(DIST_DIR, 'manifest.json')

/** The URL path the assets are served under. */
export const ASSETS_PATH = '/assets/'

/** Every entry point, by the name pages ask for it with. Browser modules are named `*.client.ts`. */
const ENTRIES: Record<string, string> = {
  'styles.css': 'src/platform/web/styles.css',
  'page.js': 'src/platform/web/page.client.ts',
  'request-page.js': 'src/resources/requests/request-page.client.ts',
  'files-app.js': 'src/resources/files/files-app.client.ts',
  // The SDK (coffer/client) for browsers, served like the others (its file named in dist/manifest.json).
  'sdk.js': 'src/clients/sdk/index.ts',
}

export type AssetName = keyof typeof ENTRIES

export interface Manifest {
  /** Entry name → file name under ASSETS_DIR. */
  files: Record<string, string>
  /** Every source file the bundles were made from → its SHA-256, to tell whether they are still current. */
  inputs: Record<string, string>
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')

/** Writes a file whole or not at all: processes building at once never serve a half-written one. */
async function writeAtomically(file: string, data: Buffer | string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(temporary, data)
  await rename(temporary, file)
}

const STREAMS_DETECTION = 'var supportsRequestStreams = (() => {'

/**
 * The @vercel/blob client, for browsers that can stream a request body, sends bytes with progress as a
 * streaming `fetch`, which Chromium allows only over HTTP/2 or later: against Coffer, which speaks HTTP/1.1
 * (on a LAN, or behind a proxy that forwards HTTP/1.1), every such upload fails. Its other way of reporting
 * progress, XMLHttpRequest, works over any HTTP, so the bundle takes that one: the library's own feature
 * detection is turned off here. The build fails if the detection is no longer found, so that a new version of
 * the library is looked at rather than silently uploading the other way.
 */
function uploadsWithoutRequestStreams() {
  let patched = 0
  return {
    name: 'vercel-blob-without-request-streams',
    setup(build: import('esbuild').PluginBuild) {
      build.onLoad({ filter: /[\\/]@vercel[\\/]blob[\\/]dist[\\/][^\\/]+\.js$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8')
        if (!source.includes(STREAMS_DETECTION)) return { contents: source, loader: 'js' }
        patched++
        return {
          contents: source.replace(STREAMS_DETECTION, `var supportsRequestStreams = false && (() => {`),
          loader: 'js',
        }
      })
      build.onEnd((result) => {
        if (result.errors.length === 0 && patched === 0) {
          throw new Error(`@vercel/blob no longer holds "${STREAMS_DETECTION}": see web/build.ts`)
        }
      })
    },
  }
}

/** Bundles every entry and writes the files, their compressed copies and the manifest. */
export async function buildAssets(): Promise<Manifest> {
  // Imported here: a server whose assets are current never loads esbuild.
  const { build } = await import('esbuild')
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: Object.entries(ENTRIES).map(([name, source]) => ({
      in: source,
      out: name.replace(/\.\w+$/, ''),
    })),
    bundle: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    minify: true,
    sourcemap: false,
    entryNames: '[name]-[hash]',
    outdir: ASSETS_DIR,
    write: false,
    metafile: true,
    legalComments: 'none',
    logLevel: 'silent',
    // The @vercel/blob client reads the blob API's address from `process.env`, which browsers lack; the SDK's
    // transfer sets this global to the address it is given (sdk/transfer.ts).
    define: { 'process.env.VERCEL_BLOB_API_URL': 'COFFER_BLOB_API_URL' },
    // The SDK reads a path's file only in Node, through a dynamic import a browser never reaches.
    external: ['node:*'],
    plugins: [uploadsWithoutRequestStreams()],
  })
  await mkdir(ASSETS_DIR, { recursive: true })
  const files: Record<string, string> = {}
  const gzipped = promisify(gzip)
  const brotli = promisify(brotliCompress)
  for (const output of result.outputFiles) {
    const meta = result.metafile.outputs[path.relative(ROOT, output.path)]
    const entry = Object.entries(ENTRIES).find(([, source]) => source === meta?.entryPoint)
    if (entry) files[entry[0]] = path.basename(output.path)
    const data = Buffer.from(output.contents)
    await writeAtomically(output.path, data)
    await writeAtomically(`${output.path}.gz`, await gzipped(data, { level: 9 }))
    await writeAtomically(
      `${output.path}.br`,
      await brotli(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
    )
  }
  const inputs: Record<string, string> = {}
  for (const input of Object.keys(result.metafile.inputs).sort()) {
    inputs[input] = sha256(await readFile(path.join(ROOT, input)))
  }
  const manifest: Manifest = { files, inputs }
  await writeAtomically(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`)
  return manifest
}

/** The manifest of the built assets, if they exist and every source is as it was when they were built. */
async function currentManifest(): Promise<Manifest | undefined> {
  if (!existsSync(MANIFEST)) return undefined
  const manifest = JSON.parse(await readFile(MANIFEST, 'utf8')) as Manifest
  if (Object.keys(ENTRIES).some((name) => !manifest.files[name])) return undefined
  if (Object.values(manifest.files).some((file) => !existsSync(path.join(ASSETS_DIR, file)))) return undefined
  for (const [input, hash] of Object.entries(manifest.inputs)) {
    const source = path.join(ROOT, input)
    if (!existsSync(source) || sha256(await readFile(source)) !== hash) return undefined
  }
  return manifest
}

/** The manifest of current assets, building them first when they are missing or stale. */
export async function ensureAssets(): Promise<Manifest> {
  return (await currentManifest()) ?? buildAssets()
}

if (import.meta.main) {
  const manifest = await buildAssets()
  console.log(`assets built in dist/assets: ${Object.values(manifest.files).join(', ')}`)
}
