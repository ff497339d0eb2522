// `coffer upload` and `coffer download`: the bytes, with progress at a terminal (progress.ts). An upload keeps
// what resumes it (its grant, the parts stored) in the user's directory (`<config>/uploads/`, the SDK's
// fileResumeStore), so that the same command run again after a kill, a Ctrl-C or a lost connection sends each
// unfinished file's missing parts only.
import { readdir, rename, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { formatSize } from '../../platform/format-size.shared.ts'
import type { Coffer, File, ResumeStore } from '../sdk/index.ts'
import { CofferError, fileResumeStore, resumeKeyOf } from '../sdk/index.ts'
import { NameClaims, type OnConflict } from './name-claims.ts'
import type { Output } from './output.ts'
import { UsageError } from './output.ts'
import { type Bar, type Progress, progress } from './progress.ts'

/**
 * The files under `paths`: each file, and every file under each directory (recursively, in name order).
 * `nested`: the file is in a sub-directory of a directory given, which the upload does not keep (folders do
 * not nest).
 */
export async function filesUnder(
  paths: string[],
): Promise<{ path: string; size: number; mtimeMs: number; nested: boolean }[]> {
  const found: { path: string; size: number; mtimeMs: number; nested: boolean }[] = []
  const visit = async (entry: string, depth: number) => {
    const stats = await stat(entry).catch(() => {
      throw new UsageError(`${entry}: no such file or directory.`)
    })
    if (stats.isFile()) {
      found.push({ path: entry, size: stats.size, mtimeMs: stats.mtimeMs, nested: depth > 1 })
    } else if (stats.isDirectory()) {
      const names = (await readdir(entry)).sort()
      for (const name of names) await visit(path.join(entry, name), depth + 1)
    }
  }
  for (const entry of paths) await visit(entry, 0)
  return found
}

export interface Uploaded {
  path: string
  file: File
  shareUrl?: string
}

/**
 * The name a file goes in under: its own, or another when its own is taken and `onConflict` says rename; each
 * said above the bars. Undefined when it is skipped (recorded in `skipped`, its bytes out of the total).
 */
async function nameFor(
  file: { path: string; size: number },
  run: {
    claims: NameClaims
    onConflict: OnConflict
    /** Where the files go, in words ("the folder Taxes"). */
    where: string
    bars: ReturnType<typeof progress>
    skipped: { path: string; reason: string }[]
  },
): Promise<string | undefined> {
  const { claims, where, bars } = run
  const original = path.basename(file.path)
  const { name, taken } = await claims.claim(original, run.onConflict)
  if (name === undefined) {
    const reason = `a file named ${original} is already in ${where}`
    run.skipped.push({ path: file.path, reason })
    bars.skip(file.size)
    bars.note(`${file.path}: skipped, ${reason}.`)
    return undefined
  }
  if (taken && name === original) {
    bars.note(
      `${file.path}: a file named ${original} is already in ${where}; both are kept (--on-conflict skip or rename to change that).`,
    )
  } else if (taken) {
    bars.note(`${file.path} goes in as ${name}: a file named ${original} is already in ${where}.`)
  }
  return name
}

/**
 * Uploads the files under `paths`, `parallel` at a time, into `folderId` (named `folderName`, null for the top
 * level), sharing each when asked; each new file's id (and share URL) is printed as it is done. A name already
 * there (or taken by another file of the run, from another directory) is said, and kept, skipped or renamed as
 * `onConflict` asks. An empty file is refused by the API (a file has at least one byte): it is reported and the
 * others go on.
 */
export async function upload(
  coffer: Coffer,
  out: Output,
  options: {
    paths: string[]
    folderId: string | null
    folderName: string | null
    onConflict: OnConflict
    share: boolean
    parallel: number
    signal: AbortSignal
    /**
     * Where unfinished uploads are kept, to resume (a directory); `fresh`: every file starts over, what was
     * kept of it is dropped, and nothing is kept (a Ctrl-C cancels).
     */
    resume?: { dir: string; fresh: boolean }
  },
): Promise<{
  uploaded: Uploaded[]
  skipped: { path: string; reason: string }[]
  failed: { path: string; error: string }[]
}> {
  const files = await filesUnder(options.paths)
  if (files.length === 0) throw new UsageError('No file to upload under the paths given.')
  // Said before anything goes: a sub-directory's files land beside the others, under their own names.
  for (const file of files.filter((each) => each.nested)) {
    out.note(
      `${file.path} goes in as ${path.basename(file.path)}: folders do not nest, its directory is not kept.`,
    )
  }
  const where = options.folderName === null ? 'the top level' : `the folder ${options.folderName}`
  const claims = new NameClaims(coffer, options.folderId)
  const total = files.reduce((sum, file) => sum + file.size, 0)
  const bars = progress(!out.json, files.length, total)
  const uploaded: Uploaded[] = []
  const skipped: { path: string; reason: string }[] = []
  const failed: { path: string; error: string }[] = []
  const queue = [...files]
  const store = options.resume && (await resumeStore(options.resume.dir))
  const resume = store && (options.resume?.fresh ? { store, fresh: true } : { store, fresh: false })
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { path: filePath, size } = next
      let bar: ReturnType<typeof bars.start> | undefined
      try {
        const name = await nameFor(next, { claims, onConflict: options.onConflict, where, bars, skipped })
        if (name === undefined) continue
        bar = bars.start(name, size)
        const file = await sendFile(coffer, next, { ...options, name, bar, bars, resume })
        bar.done()
        const done: Uploaded = { path: filePath, file }
        if (options.share) done.shareUrl = (await coffer.shares.create({ fileId: file.id })).publicUrl
        uploaded.push(done)
        if (!out.json) {
          bars.log(
            `${file.id}  ${filePath}  ${formatSize(file.size)}${done.shareUrl ? `  ${done.shareUrl}` : ''}`,
          )
        }
      } catch (error) {
        bar?.drop()
        // What fails every file ends the upload: a cancellation, a credential refused or lacking a scope.
        if (
          error instanceof CofferError &&
          (error.code === 'aborted' || error.status === 401 || error.status === 403)
        ) {
          throw error
        }
        failed.push({ path: filePath, error: (error as Error).message })
        bars.note(`${filePath}: ${(error as Error).message}`)
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(options.parallel, files.length) }, worker))
  } catch (error) {
    if (options.signal.aborted) {
      // Each file is made whole or not at all: those printed are uploaded, the others are not, and resume.
      const done = `${uploaded.length} of ${files.length} files uploaded`
      throw new CofferError(
        0,
        'aborted',
        resume && !resume.fresh
          ? `Interrupted (${done}): run the same command again to resume.`
          : `Cancelled: ${done}.`,
        '',
      )
    }
    throw error
  } finally {
    bars.stop()
  }
  return { uploaded, skipped, failed }
}

/** The store of unfinished uploads in `dir`, its records of grants expired removed. */
async function resumeStore(dir: string): Promise<ResumeStore> {
  const store = fileResumeStore(dir)
  // Reading every record removes those that can no longer be used (fileResumeStore).
  await store.list().catch(() => [])
  return store
}

/**
 * Sends one file as `name`, its progress on `bar`. With `resume`, an upload of it that stopped goes on (said
 * above the bars) and this one is kept as it goes; `fresh`: what was kept of it goes, and nothing is kept.
 */
async function sendFile(
  coffer: Coffer,
  file: { path: string; size: number; mtimeMs: number },
  options: {
    name: string
    folderId: string | null
    signal: AbortSignal
    bar: Bar
    bars: Progress
    resume: { store: ResumeStore; fresh: boolean } | undefined
  },
): Promise<File> {
  const { bar, bars, resume } = options
  if (resume?.fresh) {
    const identity = { name: path.resolve(file.path), size: file.size, lastModified: file.mtimeMs }
    await resume.store.delete(resumeKeyOf(identity)).catch(() => undefined)
  }
  return coffer.files.upload(file.path, {
    name: options.name,
    folderId: options.folderId,
    onProgress: ({ loaded }) => bar.update(loaded),
    signal: options.signal,
    ...(resume && !resume.fresh
      ? {
          resume: resume.store,
          onResume: ({ stored, total }) => {
            bar.resume(stored)
            bars.note(`${file.path}: resuming: ${formatSize(stored)} of ${formatSize(total)} already stored.`)
          },
        }
      : {}),
  })
}

/**
 * Downloads a file to `output` ('-' for stdout). The bytes go to `<output>.<file id>.part` first, renamed once
 * whole: a download cut short (Ctrl-C, a lost connection, a kill) resumes from where that file ends.
 */
export async function download(
  coffer: Coffer,
  out: Output,
  options: { file: File; output: string; signal: AbortSignal },
): Promise<{ path: string; bytes: number; resumedFrom: number }> {
  const { file, signal } = options
  if (options.output === '-') {
    const response = await coffer.files.download(file.id, { signal })
    await pipeline(
      Readable.fromWeb(response.body as import('node:stream/web').ReadableStream),
      process.stdout,
    )
    return { path: '-', bytes: file.size, resumedFrom: 0 }
  }
  const target = options.output
  const partial = `${target}.${file.id}.part`
  const have = await stat(partial).then(
    (stats) => stats.size,
    () => 0,
  )
  const from = have > 0 && have < file.size ? have : 0
  if (have >= file.size && have > 0) await rm(partial)
  const bars = progress(!out.json, 1, file.size)
  const bar = bars.start(file.name, file.size, from)
  let loaded = from
  let resumedFrom = 0
  try {
    const saved = await coffer.files.downloadTo(file.id, partial, {
      from,
      signal,
      onProgress: (written) => {
        loaded = from + written
        bar.update(loaded)
      },
    })
    resumedFrom = saved.resumed ? from : 0
  } catch (error) {
    bars.stop()
    if (signal.aborted)
      throw new CofferError(
        0,
        'aborted',
        `Cancelled; run the command again to resume from ${formatSize(loaded)}.`,
        '',
      )
    throw error
  }
  bar.done()
  bars.stop()
  const written = (await stat(partial)).size
  if (written !== file.size) {
    throw new CofferError(
      0,
      'network_error',
      `The download ended at ${written} of ${file.size} bytes.`,
      'Run the command again to resume it.',
    )
  }
  await rename(partial, target)
  return { path: target, bytes: file.size, resumedFrom }
}
