// Uploads one file to Coffer with the @vercel/blob client, as the API's upload procedure says.
//   COFFER_URL=http://localhost:8080 COFFER_API_KEY=coffer_... node examples/upload.mjs <file> [content-type]
// Prints the new file's ID.
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { upload } from '@vercel/blob/client'

const [path, type = 'application/octet-stream'] = process.argv.slice(2)
const api = `${process.env.COFFER_URL}/api/v1`
const auth = { authorization: `Bearer ${process.env.COFFER_API_KEY}` }

// upload() sends the bytes to the blob API this variable names: Coffer's own (`blobApiUrl` of the capability
// index), never Vercel's.
process.env.VERCEL_BLOB_API_URL ??= `${process.env.COFFER_URL}/blob`

// 1. Prepare the upload: one grant per file.
const { size } = await stat(path)
const prepared = await fetch(`${api}/files`, {
  method: 'POST',
  headers: { ...auth, 'content-type': 'application/json' },
  body: JSON.stringify({ files: [{ name: basename(path), type, size }] }),
})
if (prepared.status !== 201) throw new Error(`POST /files: ${JSON.stringify(await prepared.json())}`)
const [grant] = (await prepared.json()).data.uploads

// 2. Send the bytes straight to blob storage; the API key stays here.
await upload(grant.pathname, createReadStream(path), {
  access: 'private',
  contentType: grant.contentType,
  handleUploadUrl: grant.handleUploadUrl,
  clientPayload: JSON.stringify(grant.clientPayload),
  multipart: grant.size > 5 * 1024 * 1024,
})

// 3. Poll until the file exists.
let status
do {
  await new Promise((resolve) => setTimeout(resolve, 100))
  status = (await (await fetch(grant.statusUrl, { headers: auth })).json()).data
} while (status.status === 'pending')
if (status.status === 'error') throw new Error(`upload failed: ${status.error}`)
console.log(status.result.id)
