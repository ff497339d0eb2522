// compose.yaml's `bucket` job: makes S3_BUCKET on the object store once, before the Coffer processes start
// (each checks the bucket at start, and none creates it). Runs in the Coffer image, whose @aws-sdk/client-s3
// reads the endpoint, region and credentials from the same AWS_* variables as Coffer. Waits up to two minutes
// for the store to answer; a bucket that exists already is fine.
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3'

const Bucket = process.env.S3_BUCKET
if (!Bucket) throw new Error('S3_BUCKET is not set')
const client = new S3Client({ forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true' })
const deadline = Date.now() + 120_000

/** Whether the bucket is there now: made by this call, or before. */
async function ensureBucket() {
  try {
    await client.send(new HeadBucketCommand({ Bucket }))
    console.log(`bucket ${Bucket} is there`)
    return
  } catch (error) {
    if (error?.$metadata?.httpStatusCode !== 404) throw error
  }
  try {
    await client.send(new CreateBucketCommand({ Bucket }))
    console.log(`bucket ${Bucket} created`)
  } catch (error) {
    if (error?.name !== 'BucketAlreadyOwnedByYou') throw error
  }
}

for (;;) {
  try {
    await ensureBucket()
    break
  } catch (error) {
    if (Date.now() > deadline) throw error
    console.log(`waiting for the object store (${error?.name ?? error})`)
    await new Promise((resolve) => setTimeout(resolve, 2000))
  }
}
client.destroy()
