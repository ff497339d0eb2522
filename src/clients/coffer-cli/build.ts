// The coffer command and the SDK (coffer/client) as JavaScript for Node.js 20.19 and later: what the package in
// packages/coffer ships, built when it is packed (its `prepack`). Each is one bundle with what it uses (commander,
// cli-progress, oauth4webapi, @vercel/blob, the MCP SDK…), so that installing the package fetches nothing
// more and the command starts without resolving hundreds of modules; the code that only some commands need
// stays in chunks of its own, loaded when they run. The SDK's types are its sources' declarations (tsc).
//
//   node src/clients/coffer-cli/build.ts
import { execFile } from 'node:child_process'
import { copyFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { build } from 'esbuild'
import { OLDEST_NODE } from './node-version.ts'

const ROOT = path.resolve(import.meta.dirname, '../../..')
export const PACKAGE_DIR = path.join(ROOT, 'packages', 'coffer')
const OUT = path.join(PACKAGE_DIR, 'dist')

/** What the bundles' syntax may use: the oldest Node.js the command runs on (main.ts tells an older one). */
export const NODE_TARGET = `node${OLDEST_NODE}`

export async function buildPackage(): Promise<void> {
  await rm(OUT, { recursive: true, force: true })
  await build({
    absWorkingDir: ROOT,
    entryPoints: { coffer: 'src/clients/coffer-cli/main.ts', 'client/index': 'src/clients/sdk/index.ts' },
    outdir: OUT,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: NODE_TARGET,
    chunkNames: 'chunks/[name]-[hash]',
    // Some bundled packages are CommonJS and `require` Node's own modules, which an ES module has no `require`
    // for: each file gets one.
    banner: {
      js: "import { createRequire as __cofferCreateRequire } from 'node:module'; const require = __cofferCreateRequire(import.meta.url);",
    },
    legalComments: 'linked',
    logLevel: 'warning',
  })
  await promisify(execFile)(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'typescript7', 'bin', 'tsc'),
      '--project',
      path.join(PACKAGE_DIR, 'tsconfig.types.json'),
    ],
    { cwd: ROOT },
  )
  // Written by openapi-typescript as a declaration file already: tsc leaves it where it is.
  await copyFile(path.join(ROOT, 'src', 'clients', 'sdk', 'api.d.ts'), path.join(OUT, 'client', 'api.d.ts'))
}

if (import.meta.main) await buildPackage()
