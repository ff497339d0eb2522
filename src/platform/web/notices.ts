// A confirmation after a change ("3 files deleted."), shown once the browser is redirected back (303): the
// address carries a code and a count, never the words, so that no one can make a page say what they like
// with a crafted link. Each resource keeps its own table of codes and their sentences.

export type Notices = Readonly<Record<string, (n: number) => string>>

/** `path` (and its #fragment) with a `done` code and count to show once the browser is back; its cursor dropped. */
export function withNotice(path: string, done: string, n?: number): string {
  const url = new URL(path, 'http://coffer.invalid')
  url.searchParams.delete('cursor')
  url.searchParams.set('done', done)
  if (n !== undefined) url.searchParams.set('n', String(n))
  return `${url.pathname}${url.search}${url.hash}`
}

/** The sentence of a `done` code in `notices`; none for an unknown code. */
export function noticeOf(notices: Notices, done: string | undefined, n = 0): string | undefined {
  return done === undefined ? undefined : notices[done]?.(n)
}
