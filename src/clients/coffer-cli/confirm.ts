// A yes-or-no question at the terminal, before what cannot be undone (`coffer trash empty`). Asked on stderr,
// so that stdout keeps only results; only where stdin is a terminal: a script says --yes instead.
import { createInterface } from 'node:readline/promises'
import { CofferError } from '../sdk/errors.ts'
import { UsageError } from './output.ts'

/**
 * Asks `question` (with " [y/N] ") and resolves with whether the answer was yes. Without a terminal to ask
 * at, a usage error that names `yesOption`; Ctrl-C (or `signal`) rejects as cancelled (exit 130).
 */
export async function confirm(
  question: string,
  options: {
    signal: AbortSignal
    yesOption?: string
    stdin?: NodeJS.ReadStream
    stderr?: NodeJS.WriteStream
  },
): Promise<boolean> {
  const stdin = options.stdin ?? process.stdin
  const stderr = options.stderr ?? process.stderr
  const yes = options.yesOption ?? '--yes'
  if (!stdin.isTTY) {
    throw new UsageError(
      'This cannot be undone, and there is no terminal to ask at.',
      `Add ${yes} to go ahead.`,
    )
  }
  const cancelled = () => new CofferError(0, 'aborted', 'Cancelled: nothing was changed.', '')
  const lines = createInterface({ input: stdin, output: stderr })
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      // At the terminal, readline takes Ctrl-C itself (the process sees no SIGINT).
      lines.once('SIGINT', () => {
        stderr.write('\n')
        reject(cancelled())
      })
      lines.once('close', () => {
        stderr.write('\n')
        reject(cancelled())
      })
      lines
        .question(`${question} [y/N] `, { signal: options.signal })
        .then(resolve, () => reject(cancelled()))
    })
    return /^\s*y(es)?\s*$/i.test(answer)
  } finally {
    lines.removeAllListeners('close')
    lines.close()
  }
}
