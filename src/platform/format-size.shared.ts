// A byte count as people read it, for pages (in the server and in the browser) and for messages that name a
// size limit. Imports nothing, so that browser modules may use it too.

const UNITS = ['kB', 'MB', 'GB', 'TB'] as const

/**
 * A byte count in decimal units, as file managers show it: "512 bytes", "1.2 MB", "3 GB"; one decimal at
 * most, and the next unit once a value would round to 1,000 ("1 MB", not "1,000 kB"). Written out rather than
 * through Intl's unit format, which a list of files paid for on every row.
 */
export function formatSize(bytes: number): string {
  if (bytes < 1000) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`
  let unit = 0
  let value = bytes / 1000
  while (value >= 999.95 && unit < UNITS.length - 1) {
    value /= 1000
    unit++
  }
  const [whole, fraction] = String(Math.round(value * 10) / 10).split('.')
  const grouped = (whole as string).replace(/\B(?=(\d{3})+$)/g, ',')
  return `${fraction ? `${grouped}.${fraction}` : grouped} ${UNITS[unit]}`
}
