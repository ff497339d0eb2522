// The oldest Node.js the built command runs on (its bundle's target, build.ts): an older one is told so in one
// line, rather than failing on the first API it lacks. Plain enough to run on any Node.
export const OLDEST_NODE = '20.19.0'

/** Whether `version` ("20.18.1", or "v20.18.1" as process.version says it) is older than OLDEST_NODE. */
export function tooOld(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number)
  const [oldestMajor = 0, oldestMinor = 0] = OLDEST_NODE.split('.').map(Number)
  return major < oldestMajor || (major === oldestMajor && minor < oldestMinor)
}
