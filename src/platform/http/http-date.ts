// HTTP dates (RFC 9110 section 5.6.7), read as strictly as the RFC writes them: what a proxy in front of Coffer
// (nginx) reads a validator as must be what Coffer reads it as, or the two disagree on what a conditional
// request asks for. `Date.parse` takes far more (ISO 8601, dates without a zone, "Nov 28 2026"), so it is used
// for none of them.

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
const LONG_DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'
const MONTH = `(${MONTHS.join('|')})`

/** `Sun, 06 Nov 1994 08:49:37 GMT`: the one form senders must use. */
const IMF_FIXDATE = new RegExp(`^(?:${DAYS.join('|')}), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`)
/** `Sunday, 06-Nov-94 08:49:37 GMT`: obsolete, still to be read. */
const RFC_850 = new RegExp(`^(?:${LONG_DAYS.join('|')}), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`)
/** `Sun Nov  6 08:49:37 1994` (C's asctime): obsolete, still to be read. */
const ASCTIME = new RegExp(`^(?:${DAYS.join('|')}) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`)

/**
 * The time (epoch ms) an HTTP date names, or undefined for anything else: another form, another zone than GMT,
 * a day or time that does not exist (31 April, 24:00:00, a leap second). A two-digit year is the one of the last
 * hundred that is at most 50 years ahead, as the RFC says.
 */
export function parseHttpDate(value: string): number | undefined {
  const parts = dateParts(value)
  if (!parts) return undefined
  const { year, month, day, hours, minutes, seconds } = parts
  const ms = Date.UTC(year, month, day, hours, minutes, seconds)
  const date = new Date(ms)
  // Date.UTC rolls 31 April over into May and 24:00 into the next day: a date that does not exist is refused.
  const exists =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hours &&
    date.getUTCMinutes() === minutes &&
    date.getUTCSeconds() === seconds
  return exists ? ms : undefined
}

interface DateParts {
  year: number
  /** 0 for January. */
  month: number
  day: number
  hours: number
  minutes: number
  seconds: number
}

/** The fields of an HTTP date in any of its three forms, unchecked; undefined for anything else. */
function dateParts(value: string): DateParts | undefined {
  const fixdate = IMF_FIXDATE.exec(value)
  if (fixdate) {
    const [, day, month, year, ...time] = fixdate
    return fields(year, month, day, time)
  }
  const rfc850 = RFC_850.exec(value)
  if (rfc850) {
    const [, day, month, twoDigits, ...time] = rfc850
    const thisYear = new Date().getUTCFullYear()
    let year = thisYear - (thisYear % 100) + Number(twoDigits)
    if (year > thisYear + 50) year -= 100
    return fields(String(year), month, day, time)
  }
  const asctime = ASCTIME.exec(value)
  if (asctime) {
    const [, month, day, hours, minutes, seconds, year] = asctime
    return fields(year, month, day?.trim(), [hours, minutes, seconds])
  }
  return undefined
}

function fields(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  time: (string | undefined)[],
): DateParts {
  const [hours, minutes, seconds] = time.map(Number) as [number, number, number]
  return { year: Number(year), month: MONTHS.indexOf(month ?? ''), day: Number(day), hours, minutes, seconds }
}

/** The IMF-fixdate of `ms` (whole seconds). */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString()
}
