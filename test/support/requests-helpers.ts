// Helpers shared by the file request tests (requests.test.ts and requests-submissions.test.ts): the API path,
// and requests and folders made through the API the way a client makes them.
import assert from 'node:assert/strict'
import type { App } from '../../src/app.ts'
import { call } from './harness.ts'

export const REQUESTS = '/api/v1/requests'

/** Lets the millisecond clock move on, so that items made one after another have distinct createdAt. */
export const tick = () => new Promise((resolve) => setTimeout(resolve, 3))

export async function newFolder(app: App, token: string, name = `f-${Math.random().toString(36).slice(2)}`) {
  const res = await call(app, 'POST', '/api/v1/folders', { token, body: { name } })
  assert.equal(res.status, 201)
  return res.body.data
}

export async function newRequest(app: App, token: string, body: Record<string, unknown> = {}) {
  const res = await call(app, 'POST', REQUESTS, { token, body: { title: 'Send me files', ...body } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.data
}

export function publicIdOf(request: { publicUrl: string }): string {
  const match = /^https?:\/\/[^/]+\/r\/([0-9a-z]{32})$/.exec(request.publicUrl)
  assert.ok(match?.[1], `unexpected publicUrl ${request.publicUrl}`)
  return match[1]
}
