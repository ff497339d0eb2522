// A byte count as people read it, for pages (in the server and in the browser) and for messages that name a
// size limit. Imports nothing, so that browser modules may use it too.

const UNITS = ['byte', 'kilobyte', 'megabyte', 'gigabyte', 'terabyte'] as const
const SIZE_FORMATS = UNITS.map(
  (unit) =>
    new Intl.NumberFormat('en', { style: 'unit', unit, unitDisplay: 'short', maximumFractionDigits: 1 }),
)

/** A byte count in decimal units, as file managers show it: "512 bytes", "1.2 MB", "3 GB". */
export function formatSize(bytes: number): string {
  if (bytes < 1000) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`
  let unit = 0
  let value = bytes
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000
    unit++
  }
  return (SIZE_FORMATS[unit] as Intl.NumberFormat).format(value)
}
