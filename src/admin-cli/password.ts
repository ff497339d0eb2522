// Reads a password from stdin for `--password-stdin`: the first line of a pipe, or typed at a terminal
// with echo off. The password is returned to the caller only; nothing here prints or logs it.
import { invalid } from '../platform/errors.ts'

// Far above any real password; stops an accidental `< big-file` from being read whole.
const MAX_LENGTH = 1024
const tooLong = () => invalid(`The password on stdin must be at most ${MAX_LENGTH} characters long.`)

export async function readPassword(stdin: NodeJS.ReadStream, prompt: NodeJS.WriteStream): Promise<string> {
  const password = stdin.isTTY ? await readHidden(stdin, prompt) : await readFirstLine(stdin)
  if (password.length === 0) {
    throw invalid('No password on stdin: --password-stdin expects the password as one line on stdin.')
  }
  return password
}

async function readFirstLine(stdin: NodeJS.ReadStream): Promise<string> {
  stdin.setEncoding('utf8')
  let text = ''
  // Leaving the loop early destroys stdin, so a writer that keeps the pipe open cannot hold the CLI.
  for await (const chunk of stdin) {
    text += chunk as string
    const newline = text.indexOf('\n')
    if (newline !== -1) {
      text = text.slice(0, newline)
      break
    }
    if (text.length > MAX_LENGTH) break
  }
  text = text.replace(/\r$/, '')
  if (text.length > MAX_LENGTH) throw tooLong()
  return text
}

function readHidden(stdin: NodeJS.ReadStream, prompt: NodeJS.WriteStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let password = ''
    prompt.write('Password: ')
    const finish = (error?: Error) => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      prompt.write('\n')
      if (error) reject(error)
      else resolve(password)
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish()
        if (char === '\u0003') return finish(invalid('Cancelled: no password was entered.'))
        if (char === '\u007f' || char === '\b') password = [...password].slice(0, -1).join('')
        else if (char >= ' ') password += char
        if (password.length > MAX_LENGTH) return finish(tooLong())
      }
    }
    stdin.setEncoding('utf8')
    stdin.setRawMode(true)
    stdin.on('data', onData)
    stdin.resume()
  })
}
