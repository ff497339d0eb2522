// A file request's state, decided here and only here. Every surface shows this result: the API's `state`, the
// app's badges, the public page (which takes files only while the request is open), the `coffer` command, MCP,
// the payloads of webhooks and the analytics. `requestTakesFilesNow` (requests.repository.ts) is the same rule in SQL, for
// counting requests in the database (analytics' active requests); test/states.test.ts holds the two to each
// other.

export const REQUEST_STATES = ['open', 'disabled', 'past_deadline', 'full'] as const

/**
 * - `open`: its page takes files.
 * - `disabled`: its owner turned it off.
 * - `past_deadline`: its deadline has passed.
 * - `full`: it has received the `maxFiles` files it accepts in all.
 */
export type RequestState = (typeof REQUEST_STATES)[number]

/** What the state is made of: the stored switch, the deadline, and the files received and accepted. */
export interface RequestStateFields {
  /** The owner's switch (`isActive`): false once the request is disabled. */
  isActive: boolean
  limits: { deadlineAt: number | null; maxFiles: number | null }
  /** Files received (one submission is one file). */
  submissionCount: number
}

/**
 * The first reason in this order that holds: disabled (the owner's choice, whatever else is true), past its
 * deadline, full; otherwise open. Uploads under way do not make a request full: they count against `maxFiles`
 * when more are prepared, and a request they fill becomes full once they arrive.
 */
export function requestStateOf(request: RequestStateFields, now = Date.now()): RequestState {
  if (!request.isActive) return 'disabled'
  const { deadlineAt, maxFiles } = request.limits
  if (deadlineAt !== null && deadlineAt <= now) return 'past_deadline'
  if (maxFiles !== null && request.submissionCount >= maxFiles) return 'full'
  return 'open'
}
