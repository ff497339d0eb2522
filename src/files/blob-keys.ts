// Where a file's bytes and its preview are kept in the BlobStore. The keys are made from ids the server
// chose, never from names a client sent, so no key can escape its account's prefix.

export function blobKeyOf(accountId: string, fileId: string): string {
  return `files/${accountId}/${fileId}`
}

export function previewKeyOf(accountId: string, fileId: string): string {
  return `previews/${accountId}/${fileId}`
}
