// Image previews: a WebP at most 512 px on its longer side, made with sharp from the stored blob, kept in the
// BlobStore under `previewKeyOf(...)` (blob/blob-keys.ts) and recorded in `file_previews`; deleting a file
// deletes both (FilesService.deleteMany).
import type { Readable } from 'node:stream'
import sharp from 'sharp'

export const PREVIEW_SIZE = 512
export const PREVIEW_TYPE = 'image/webp'
/** Larger images are stored without a preview rather than decoded. */
export const PREVIEW_MAX_INPUT_BYTES = 64 * 1024 * 1024

export interface Preview {
  data: Buffer
  width: number
  height: number
}

/**
 * Renders a preview from the image's bytes, or undefined when sharp cannot decode them: a damaged image is
 * still a file worth keeping, only without a preview. The input is streamed; the output is a few kilobytes.
 */
export async function renderPreview(image: Readable): Promise<Preview | undefined> {
  const pipeline = sharp({ limitInputPixels: 100_000_000, failOn: 'error' })
    .rotate()
    .resize({ width: PREVIEW_SIZE, height: PREVIEW_SIZE, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80 })
  let readError: unknown
  image.on('error', (error) => {
    readError = error
    pipeline.destroy(error)
  })
  image.pipe(pipeline)
  try {
    const { data, info } = await pipeline.toBuffer({ resolveWithObject: true })
    return { data, width: info.width, height: info.height }
  } catch {
    // Failing to read the blob is a fault of the store, not of the image.
    if (readError !== undefined) throw readError
    return undefined
  } finally {
    image.destroy()
  }
}
