// Named points where the fault tests (test/faults.test.ts) kill the server, to prove that what a crash there
// interrupts is finished later and nothing acknowledged is lost. Off unless COFFER_FAULT_POINT names a point:
// the process then dies by SIGKILL when it reaches it, as it would on a power cut, with nothing flushed or
// cleaned up. `uncaught:<point>` throws an error nothing catches there instead, as a bug would (the crash is
// then the process's own, and logged). Never set in production.
const armed = process.env.COFFER_FAULT_POINT

export type FaultPoint =
  /** A file deletion has committed; its blobs are not removed yet. */
  | 'files-deleted'
  /** An upload's file and (for a file request) its submission are committed; the upload is not complete. */
  | 'file-created'
  /** A folder's deletion (its files and requests moved to root) is committed; the answer is not sent. */
  | 'folder-deleted'
  /** A webhook delivery is leased by this process; its attempt is not made. */
  | 'webhook-leased'

export function faultPoint(point: FaultPoint): void {
  if (armed === point) process.kill(process.pid, 'SIGKILL')
  if (armed === `uncaught:${point}`) {
    setImmediate(() => {
      throw new Error(`fault point ${point}: an error nothing catches`)
    })
  }
}
