// A submitter's side of a file request, as its public page does it, for tests: prepare through the public
// API, send each file's bytes with the real @vercel/blob client, then follow the uploads by their grants.
import assert from 'node:assert/strict'
import { upload } from '@vercel/blob/client'
import type { App } from '../../src/app.ts'
import { call } from './harness.ts'
import { type Grant, MULTIPART_THRESHOLD } from './uploads.ts'

export const publicApi = (publicId: string) => `/api/v1/public/requests/${publicId}`

/** A grant of the public API: an API grant without its status address (status is asked for by grant). */
export type PublicGrant = Omit<Grant, 'statusUrl'>

export interface SubmittedFile {
  name: string
  type: string
  content: Buffer | string
}

export interface SubmitterFields {
  submitterName?: string | null
  submitterEmail?: string | null
  message?: string | null
}

export type PublicStatus = {
  intentId: string
  status: 'pending' | 'complete' | 'error'
  phase?: string
  error?: string
}

/** POST …/uploads; returns the whole response, for tests of refusals. */
export function preparePublic(
  app: App,
  publicId: string,
  fields: SubmitterFields,
  files: SubmittedFile[],
  ip?: string,
) {
  return call(app, 'POST', `${publicApi(publicId)}/uploads`, {
    ip,
    body: {
      ...fields,
      files: files.map((file) => ({
        name: file.name,
        type: file.type,
        size: Buffer.byteLength(file.content),
      })),
    },
  })
}

const granted = (grants: PublicGrant[]) =>
  grants.map((grant) => ({ intentId: grant.intentId, grant: grant.clientPayload.grant }))

export async function statusOf(app: App, publicId: string, grants: PublicGrant[]): Promise<PublicStatus[]> {
  const res = await call(app, 'POST', `${publicApi(publicId)}/uploads/status`, {
    body: { uploads: granted(grants) },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.data
}

export async function cancelPublic(app: App, publicId: string, grants: PublicGrant[]): Promise<void> {
  const res = await call(app, 'POST', `${publicApi(publicId)}/uploads/cancel`, {
    body: { uploads: granted(grants) },
  })
  assert.equal(res.status, 204, JSON.stringify(res.body))
}

/** Sends one file's bytes exactly as the page does, to the blob API of the server that prepared it. */
export function sendBytes(grant: PublicGrant, content: Buffer | string) {
  process.env.VERCEL_BLOB_API_URL = `${new URL(grant.handleUploadUrl).origin}/blob`
  return upload(grant.pathname, Buffer.from(content), {
    access: 'private',
    contentType: grant.contentType,
    handleUploadUrl: grant.handleUploadUrl,
    clientPayload: JSON.stringify(grant.clientPayload),
    multipart: grant.size > MULTIPART_THRESHOLD,
  })
}

/** Polls the status of the uploads until none is pending. */
export async function settle(app: App, publicId: string, grants: PublicGrant[], timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const statuses = await statusOf(app, publicId, grants)
    if (statuses.every((s) => s.status !== 'pending')) return statuses
    if (Date.now() > deadline) throw new Error(`uploads still pending after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * A whole submission: prepare, send every file, wait until processing has ended; the app must be listening
 * (the blob client talks to a real port). Returns the grants and their final statuses.
 */
export async function submit(
  app: App,
  publicId: string,
  fields: SubmitterFields,
  files: SubmittedFile[],
): Promise<{ grants: PublicGrant[]; statuses: PublicStatus[] }> {
  const res = await preparePublic(app, publicId, fields, files)
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const grants: PublicGrant[] = res.body.data.uploads
  await Promise.all(grants.map((grant, i) => sendBytes(grant, (files[i] as SubmittedFile).content)))
  return { grants, statuses: await settle(app, publicId, grants) }
}
