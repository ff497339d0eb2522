// The names `coffer upload` gives files where a name is already taken: kept, skipped or renamed "stem (2).ext".
// Apart from the transfers, so that the command's options read the choices without loading the progress bars.
import type { Coffer } from '../sdk/index.ts'

/** What `coffer upload` does with a file whose name is already taken where it goes. */
export const ON_CONFLICT = ['keep-both', 'skip', 'rename'] as const
export type OnConflict = (typeof ON_CONFLICT)[number]

/**
 * The name a file goes in under, where names already taken are those of the folder (`folderId`, null for the
 * top level) and those this run has claimed: `name` itself when free, else the first of "stem (2).ext",
 * "stem (3).ext"… that is free ('rename'), or undefined ('skip'); 'keep-both' keeps the name. `taken` says
 * whether the name was taken.
 */
export class NameClaims {
  readonly #coffer: Coffer
  readonly #folderId: string | null
  readonly #claimed = new Set<string>()
  /** The claims so far, settled in the order they were asked: the first file of a run keeps the name. */
  #previous: Promise<unknown> = Promise.resolve()

  constructor(coffer: Coffer, folderId: string | null) {
    this.#coffer = coffer
    this.#folderId = folderId
  }

  claim(name: string, onConflict: OnConflict): Promise<{ name?: string; taken: boolean }> {
    const dot = name.lastIndexOf('.')
    const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, '']
    // One search for the stem finds the name and every renamed copy of it ("stem (2).ext" contains the stem).
    // The searches of parallel uploads go at once; their claims are decided one after the other, in order.
    const searched = this.#namesContaining(onConflict === 'rename' ? stem : name)
    const claimed = Promise.all([searched, this.#previous]).then(([there]) => {
      const isTaken = (candidate: string) => there.has(candidate) || this.#claimed.has(candidate)
      if (!isTaken(name)) return this.#claimFree(name, false)
      if (onConflict === 'skip') return { taken: true }
      if (onConflict === 'keep-both') return this.#claimFree(name, true)
      let n = 2
      while (isTaken(`${stem} (${n})${extension}`)) n++
      return this.#claimFree(`${stem} (${n})${extension}`, true)
    })
    this.#previous = claimed.catch(() => undefined)
    return claimed
  }

  #claimFree(name: string, taken: boolean) {
    this.#claimed.add(name)
    return { name, taken }
  }

  /** The names of the folder's files that contain `text` (the API's name search, which ignores case). */
  async #namesContaining(text: string): Promise<Set<string>> {
    const names = new Set<string>()
    for await (const file of this.#coffer.files.list({
      query: text,
      ...(this.#folderId ? { folderId: this.#folderId } : {}),
      limit: 100,
    })) {
      if (this.#folderId !== null || file.folderId === null) names.add(file.name)
    }
    return names
  }
}
