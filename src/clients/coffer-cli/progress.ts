// Progress of transfers at a terminal: a bar per file under way and one for the total (bytes, speed, time
// left), drawn by cli-progress; each file done leaves a line above them. Nothing is drawn when stdout is not a
// terminal (a pipe, a file, a log) or with --json: the results alone are printed there, a line each.
import cliProgress from 'cli-progress'
import { formatSize } from '../../platform/format-size.shared.ts'

export interface Bar {
  update(loaded: number): void
  /** The file is whole: its bar goes, its bytes count in the total. */
  done(): void
  /** The file failed or was cancelled: its bar goes, and the total keeps what it had sent. */
  drop(): void
  /** `from` bytes are there already (a resumed upload): the bar starts there, and its speed counts the rest. */
  resume(from: number): void
}

export interface Progress {
  /** A bar for one file of `total` bytes, of which `from` are there already (a resumed download). */
  start(name: string, total: number, from?: number): Bar
  /** A result line: above the bars while they are drawn, else on stdout. */
  log(line: string): void
  /** Something people should know that is not a result: above the bars while they are drawn, else on stderr. */
  note(line: string): void
  /** A file of `size` bytes that will not be sent after all: the total no longer counts it. */
  skip(size: number): void
  /** Ends every bar, leaving the total on the screen. */
  stop(): void
}

/** Wide enough for most names; longer ones are cut in the middle. */
const NAME_WIDTH = 28

function shortName(name: string): string {
  if (name.length <= NAME_WIDTH) return name.padEnd(NAME_WIDTH)
  const half = Math.floor((NAME_WIDTH - 1) / 2)
  return `${name.slice(0, half)}…${name.slice(name.length - (NAME_WIDTH - 1 - half))}`
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--'
  if (seconds < 60) return `${Math.ceil(seconds)}s`
  if (seconds < 3600)
    return `${Math.floor(seconds / 60)}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s`
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`
}

/** How long a bar runs before it shows a speed and a time left: the first moments' figures mean nothing. */
const SETTLING_MS = 1000

/** A bar's line: its name, the bar, how far, and once it has settled its speed over this run and the time left. */
export const barLine: cliProgress.GenericFormatter = (
  options,
  params,
  payload: { name: string; from: number },
) => {
  const bar = cliProgress.Format.BarFormat(params.progress, options)
  const ms = Date.now() - params.startTime
  const percent = `${Math.floor(params.progress * 100)}%`.padStart(4)
  const sizes = `${formatSize(params.value)} of ${formatSize(params.total)}`
  if (params.value >= params.total) return `${shortName(payload.name)} ${bar} ${percent}  ${sizes}  done`
  if (ms < SETTLING_MS) return `${shortName(payload.name)} ${bar} ${percent}  ${sizes}`
  // The bytes of this run: a resumed download's first bytes came in an earlier one.
  const speed = (params.value - payload.from) / (ms / 1000)
  return `${shortName(payload.name)} ${bar} ${percent}  ${sizes}  ${formatSize(Math.round(speed))}/s  ${duration(params.eta)} left`
}

/**
 * Bars when `enabled` and stdout is a terminal, with one for the total of `files` files of `totalBytes` when
 * there is more than one; else a Progress that draws nothing.
 */
export function progress(
  enabled: boolean,
  files: number,
  totalBytes: number,
  stream = process.stdout,
  notes = process.stderr,
): Progress {
  if (!enabled || !stream.isTTY) {
    return {
      start: () => ({ update() {}, done() {}, drop() {}, resume() {} }),
      log: (line) => void stream.write(`${line}\n`),
      note: (line) => void notes.write(`${line}\n`),
      skip() {},
      stop() {},
    }
  }
  const bars = new cliProgress.MultiBar(
    {
      format: barLine,
      stream,
      barsize: 20,
      hideCursor: true,
      // The terminal keeps wrapping long lines (a result's link is longer than a narrow window): cli-progress
      // cuts its own bars to the width instead. Without this it turns wrapping off while it draws, and the
      // terminal wrote the end of every longer line over its last column.
      linewrap: true,
      etaBuffer: 50,
      fps: 10,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      autopadding: false,
      // The bars go at the end; a line of the total takes their place (`stop`).
      clearOnComplete: true,
      // Ctrl-C is the command's to handle (it cancels the transfers, then the bars stop).
      gracefulExit: false,
    },
    cliProgress.Presets.shades_classic,
  )
  const started = Date.now()
  let expected = totalBytes
  const total = files > 1 ? bars.create(Math.max(totalBytes, 1), 0, { name: 'Total', from: 0 }) : undefined
  const loadedBy = new Map<cliProgress.SingleBar, number>()
  const refreshTotal = () => {
    if (!total) return
    let sum = 0
    for (const loaded of loadedBy.values()) sum += loaded
    total.update(sum)
  }
  // Written where the bars were, and longer than them when it wraps: what is left of them below is cleared
  // first (ESC [J), or the tail of a bar would stay beside the end of a wrapped line.
  const log = (line: string) => bars.log(`\x1b[J${line}\n`)
  return {
    start(name, size, from = 0) {
      const bar = bars.create(Math.max(size, 1), from, { name, from })
      loadedBy.set(bar, from)
      return {
        update(loaded) {
          loadedBy.set(bar, loaded)
          bar.update(loaded)
          refreshTotal()
        },
        done() {
          loadedBy.set(bar, size)
          refreshTotal()
          // The total stays on the screen; alone, the file's bar does.
          if (total) bars.remove(bar)
          else bar.update(Math.max(size, 1))
        },
        drop() {
          bars.remove(bar)
        },
        resume(from) {
          loadedBy.set(bar, from)
          bar.update(from, { name, from })
          refreshTotal()
        },
      }
    },
    log,
    note: log,
    skip(size) {
      expected -= size
      total?.setTotal(Math.max(expected, 1))
    },
    stop: () => {
      // A redraw first: it writes the lines logged since the last one, which stop() alone would drop.
      bars.update()
      bars.stop()
      if (total) {
        const seconds = (Date.now() - started) / 1000
        const sent = total.getProgress() * total.getTotal()
        stream.write(
          `Total ${formatSize(Math.round(sent))} of ${formatSize(expected)} in ${seconds.toFixed(1)} s (${formatSize(Math.round(sent / Math.max(seconds, 0.001)))}/s)\n`,
        )
      }
    },
  }
}
