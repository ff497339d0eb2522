// Files to share, made as a user would make them: uploaded with the real @vercel/blob client through the
// upload procedure (so images get their preview from processing), then shared through the API.
import assert from 'node:assert/strict'
import type { Engine } from '../../src/platform/db/engine.ts'
import type { StartOptions, TestAccount } from './harness.ts'
import {
  type ListeningContext,
  prepareUploads,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './uploads.ts'

/** The app on a real port, with the @vercel/blob client of this process pointed at it. */
export async function startSharingApp(engine: Engine, options: StartOptions = {}): Promise<ListeningContext> {
  const ctx = await startListening(engine, options)
  process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
  return ctx
}

export interface SharedFile {
  fileId: string
  shareId: string
  publicId: string
  publicUrl: string
  /** The page's path, /s/{publicId}. */
  path: string
}

/** Uploads `bytes` as `name` through the upload procedure; resolves with the new file's id. */
export async function uploadFile(
  ctx: ListeningContext,
  account: TestAccount,
  file: { name: string; type: string; bytes: Buffer },
): Promise<string> {
  const [grant] = await prepareUploads(ctx.base, account.token, [
    { name: file.name, type: file.type, size: file.bytes.length },
  ])
  assert.ok(grant)
  await uploadWithGrant(grant, file.bytes)
  const status = await waitForUpload(grant, account.token)
  assert.equal(status.status, 'complete', JSON.stringify(status))
  return (status as { result: { id: string } }).result.id
}

/** POST /shares for the file, with any of Coffer's extensions; resolves with the link. */
export async function shareFile(
  ctx: ListeningContext,
  account: TestAccount,
  fileId: string,
  extra: Record<string, unknown> = {},
): Promise<SharedFile> {
  const response = await fetch(`${ctx.base}/api/v1/shares`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ fileId, ...extra }),
  })
  const body = (await response.json()) as { data: { id: string; publicUrl: string } }
  assert.equal(response.status, 201, JSON.stringify(body))
  const url = new URL(body.data.publicUrl)
  return {
    fileId,
    shareId: body.data.id,
    publicId: url.pathname.split('/').at(-1) as string,
    publicUrl: body.data.publicUrl,
    path: url.pathname,
  }
}

/** Uploads and shares in one go. */
export async function uploadAndShare(
  ctx: ListeningContext,
  account: TestAccount,
  file: { name: string; type: string; bytes: Buffer },
  extra: Record<string, unknown> = {},
): Promise<SharedFile> {
  return shareFile(ctx, account, await uploadFile(ctx, account, file), extra)
}

/** The share's counts as the API reports them. */
export async function shareCounts(
  ctx: ListeningContext,
  account: TestAccount,
  shareId: string,
): Promise<{ viewCount: number; downloadCount: number }> {
  const response = await fetch(`${ctx.base}/api/v1/shares/${shareId}`, {
    headers: { authorization: `Bearer ${account.token}` },
  })
  const body = (await response.json()) as { data: { viewCount: number; downloadCount: number } }
  assert.equal(response.status, 200, JSON.stringify(body))
  return { viewCount: body.data.viewCount, downloadCount: body.data.downloadCount }
}
