#!/usr/bin/env node
// The coffer command (the "bin" of package.json in a clone, and of packages/coffer built): your files on a Coffer server, from the terminal, through the SDK.
// Ctrl-C cancels what is under way (uploads and downloads stop; a download resumes next time) and exits 130.
import module from 'node:module'
import { OLDEST_NODE, tooOld } from './node-version.ts'

if (tooOld(process.version)) {
  process.stderr.write(`coffer needs Node.js ${OLDEST_NODE} or later; this is Node.js ${process.version}.\n`)
  process.exit(1)
}

// Node keeps the modules it compiled (TypeScript stripped included) in the temporary directory, so that a
// command starts in about half the time after its first run. Before the imports, which it then covers.
module.enableCompileCache?.()
const { runCommand } = await import('./program.ts')

// A reader that stops early (`coffer ls | head`) closes the pipe: that ends the command quietly, as it does
// any other program's, instead of with a stack trace of the write that found the pipe closed.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})

const controller = new AbortController()
process.once('SIGINT', () => {
  controller.abort()
  // A second Ctrl-C does not wait for the cleanup.
  process.once('SIGINT', () => process.exit(130))
})
process.exitCode = await runCommand(process.argv.slice(2), controller.signal)
