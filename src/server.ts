// Entry point of `npm start`: loads the configuration, opens storage, migrates, and serves.
import module from 'node:module'

// Node keeps the modules it compiled (TypeScript stripped included) in the temporary directory, so that a process
// restarted (by its supervisor, a deploy, the fleet's rolling restart) is serving again sooner: turned on before
// the imports, which it then covers.
module.enableCompileCache?.()
const [{ buildApp }, { openBlobStore }, { ConfigError, loadConfig }, { migrate }, { openDatabase }] =
  await Promise.all([
    import('./app.ts'),
    import('./platform/blob/open-blob-store.ts'),
    import('./platform/config.ts'),
    import('./platform/db/migrate.ts'),
    import('./platform/db/open.ts'),
  ])

async function main(): Promise<void> {
  const config = loadConfig()
  const db = openDatabase(config)
  await migrate(db)
  const blobs = await openBlobStore(config)
  const app = await buildApp({ config, db, blobs })
  // An error nothing caught (a thrown one, or a rejected promise nobody awaited) leaves the process in a state
  // not to be trusted: it ends, but the log says why first, as a JSON line like every other (pino writes
  // stdout synchronously), and the supervisor starts it again (README: systemd's Restart=always).
  process.on('uncaughtException', (error, origin) => {
    app.log.fatal({ err: error, origin }, 'the process ends on an error nothing caught')
    process.exit(1)
  })

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) return
    closing = true
    const { graceMs, timeoutMs } = config.shutdown
    app.log.info(
      { signal, graceMs, timeoutMs },
      'shutting down: not ready any more, finishing what is under way',
    )
    // Load balancers see /readyz fail and stop sending requests here; until they have, requests are served.
    app.services.health.drain()
    await new Promise((resolve) => setTimeout(resolve, graceMs))
    // Then no new connection; requests under way (uploads included) finish, within the time allowed. The app
    // stays open meanwhile: an upload's last step calls it in-process, and it would refuse that once closing.
    const drained = new Promise<void>((resolve) => app.server.close(() => resolve()))
    // Connections idle between requests go now, and those that become idle later as they do.
    const reaper = setInterval(() => app.server.closeIdleConnections(), 250)
    app.server.closeIdleConnections()
    const overdue = setTimeout(() => {
      app.log.warn('requests still under way after SHUTDOWN_TIMEOUT_SECONDS: closing their connections')
      app.server.closeAllConnections()
    }, timeoutMs)
    await drained
    clearInterval(reaper)
    clearTimeout(overdue)
    // Background jobs stop, then the database.
    await app.close()
    await db.close()
    app.log.info('shut down')
    process.exit(0)
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))

  await app.listen({ port: config.port, host: config.host })
  app.log.info(
    { publicUrl: config.publicUrl, engine: db.engine, dataDir: config.dataDir },
    `Coffer is serving ${config.publicUrl}`,
  )
  await printSetupLink(app, config.publicUrl)
}

/**
 * With no account yet, prints the one-time link that creates the first one. It goes to the terminal on stderr,
 * not to the log on stdout: the link is a secret, and logs are kept and shipped.
 */
async function printSetupLink(app: Awaited<ReturnType<typeof buildApp>>, publicUrl: string) {
  const secret = await app.services.setup.issue()
  if (!secret) return
  app.log.info('No account exists yet: open the setup link printed on the terminal to create the first one.')
  process.stderr.write(
    `\nNo account exists yet. Create the first one here (the link works once, for 24 hours):\n\n  ${publicUrl}/account/setup/${secret}\n\n`,
  )
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`Configuration error: ${error.message}`)
  } else {
    console.error(error)
  }
  process.exit(1)
})
