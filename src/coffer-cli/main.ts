#!/usr/bin/env node
// The coffer command (package.json "bin"): your files on a Coffer server, from the terminal, through the SDK.
// Ctrl-C cancels what is under way (uploads and downloads stop; a download resumes next time) and exits 130.
import module from 'node:module'

// Node keeps the modules it compiled (TypeScript stripped included) in the temporary directory, so that a
// command starts in about half the time after its first run. Before the imports, which it then covers.
module.enableCompileCache?.()
const { runCommand } = await import('./program.ts')

const controller = new AbortController()
process.once('SIGINT', () => {
  controller.abort()
  // A second Ctrl-C does not wait for the cleanup.
  process.once('SIGINT', () => process.exit(130))
})
process.exitCode = await runCommand(process.argv.slice(2), controller.signal)
