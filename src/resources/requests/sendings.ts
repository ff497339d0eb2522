// The files a submitter sent at once (one preparation on a request's public page) are one sending: the owner's
// page and email show it as one entry, who sent it and their message once, with its files. Submissions from
// before sendings were recorded (migration 0030) have none and are each their own.
import type { Submission } from './requests.repository.ts'

export interface Sending<S extends Submission = Submission> {
  /** Who sent it, their message and when: those of its first submission, which all its submissions share. */
  first: S
  /** Its submissions, one per file, in the order given. */
  submissions: S[]
}

/** `submissions` grouped by sending, in the order of each sending's first submission in the list. */
export function sendingsOf<S extends Submission>(submissions: readonly S[]): Sending<S>[] {
  const sendings: Sending<S>[] = []
  const byId = new Map<string, Sending<S>>()
  for (const submission of submissions) {
    const known = submission.sendingId === null ? undefined : byId.get(submission.sendingId)
    if (known) {
      known.submissions.push(submission)
      continue
    }
    const sending = { first: submission, submissions: [submission] }
    sendings.push(sending)
    if (submission.sendingId !== null) byId.set(submission.sendingId, sending)
  }
  return sendings
}
