// Entry point of `npm run cli`, the admin command (program.ts). Node keeps the modules it compiled (TypeScript
// stripped included) in the temporary directory, so that a command starts in about half the time after its first
// run: turned on before the imports, which it then covers.
import module from 'node:module'

module.enableCompileCache?.()
const { main } = await import('./program.ts')
process.exitCode = await main(process.argv.slice(2))
