// The effective state of a share link: a link whose expiry has passed is inactive, whatever its flag says.
export function isShareActive(
  isActive: boolean | number,
  expiresAt: number | null,
  now = Date.now(),
): boolean {
  return Boolean(isActive) && (expiresAt === null || expiresAt > now)
}

export function sharePublicUrl(publicUrl: string, publicId: string): string {
  return `${publicUrl}/s/${publicId}`
}
