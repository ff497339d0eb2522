// A day chosen on a form ("2026-12-05" from a date input) means one thing on every page: until the end of that
// day in the time zone of the person who chose it. A link that "works until Dec 5", a request that takes files
// "until Dec 12", a key that "expires on Jan 1": each is stored as the instant its day ends there (the start of
// the next day, the first instant it no longer works), and shown back as that day.
//
// The reader's zone is the browser's: page.client.ts keeps it in a cookie, and the server draws pages in it. A
// form carries the zone it was drawn in (its `timeZone` field), so its days are read back as it showed them.
// Without scripts (no cookie yet), or with a zone this server's Intl does not know, it is UTC, and pages say so.
import type { FastifyRequest } from 'fastify'
import { html } from 'ghtml'
import { Type } from 'typebox'
import type { FormReading } from './form-reader.ts'
import { formatDate } from './format.ts'

/** The cookie page.client.ts keeps the browser's time zone in (not a secret: an IANA zone name). */
export const TIME_ZONE_COOKIE = 'coffer_tz'

/** The form field that carries the zone a form's days were shown in (`timeZoneInput` writes it). */
export const TimeZoneField = Type.Optional(Type.String({ maxLength: 64 }))

const MINUTE_MS = 60_000

/** `raw` if it names a time zone Intl knows, else UTC. */
export function knownTimeZone(raw: string | undefined): string {
  if (!raw) return 'UTC'
  try {
    return new Intl.DateTimeFormat('en', { timeZone: raw }).resolvedOptions().timeZone
  } catch {
    return 'UTC'
  }
}

/**
 * The zone of the reader of a page: their browser's, as its cookie says, or UTC. Read from the header: cookies
 * are parsed only where a route asks (app.ts), and a public page has no session to have parsed them.
 */
export function readerTimeZone(request: FastifyRequest): string {
  return knownTimeZone(request.server.parseCookie(request.headers.cookie ?? '')[TIME_ZONE_COOKIE])
}

const partsFormats = new Map<string, Intl.DateTimeFormat>()

/** The wall-clock time in `timeZone` at `at`, as if it were UTC: its difference from `at` is the zone's offset. */
function wallClock(at: number, timeZone: string): number {
  let format = partsFormats.get(timeZone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    })
    partsFormats.set(timeZone, format)
  }
  const part = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, Number(p.value)]))
  return Date.UTC(part.year ?? 0, (part.month ?? 1) - 1, part.day ?? 1, part.hour ?? 0, part.minute ?? 0)
}

/** The instant `day` ("2026-12-05") ends in `timeZone`: when the next day starts there. */
export function endOfDay(day: string, timeZone: string): number {
  const [year = 0, month = 1, date = 1] = day.split('-').map(Number)
  const nextMidnight = Date.UTC(year, month - 1, date + 1)
  // The zone's offset near that midnight, taken twice: a change of offset (summer time) between the guess and
  // the answer is then accounted for.
  let at = nextMidnight - (wallClock(nextMidnight, timeZone) - nextMidnight)
  at = nextMidnight - (wallClock(at, timeZone) - at)
  return Math.floor(at / MINUTE_MS) * MINUTE_MS
}

/** The day that ends at `endsAt` in `timeZone` ("2026-12-05"): what `endOfDay` was given, for a form's value. */
export function dayEndingAt(endsAt: number, timeZone: string): string {
  return new Date(wallClock(endsAt - 1, timeZone)).toISOString().slice(0, 10)
}

/** Whether `day` has ended in `timeZone` at `now`: a day that cannot be chosen for something to work until. */
export function dayHasEnded(day: string, timeZone: string, now = Date.now()): boolean {
  return endOfDay(day, timeZone) <= now
}

/** A form's hidden field: the zone its days were shown in, so that they are read back in the same one. */
export function timeZoneInput(timeZone: string): string {
  return html`<input type="hidden" name="timeZone" value="${timeZone}">`
}

/** How a hint names the zone: "UTC", or "Europe/Paris time". */
export const zoneWords = (timeZone: string) => (timeZone === 'UTC' ? 'UTC' : `${timeZone} time`)

/** Whether `endsAt` is the end of a day in `timeZone` (a midnight there), as a day chosen on a form is. */
export function endsItsDay(endsAt: number, timeZone: string): boolean {
  return endOfDay(dayEndingAt(endsAt, timeZone), timeZone) === endsAt
}

/**
 * Until when something works, in `timeZone`, in words: the day when it ends as a day there does ("Dec 5, 2026"),
 * else the day and time of its end ("Dec 5, 2026, 14:30", a deadline set through the API).
 */
export function untilWords(endsAt: number, timeZone: string): string {
  if (endsItsDay(endsAt, timeZone)) {
    return formatDate(Date.parse(`${dayEndingAt(endsAt, timeZone)}T00:00:00Z`))
  }
  const wall = wallClock(endsAt, timeZone)
  return `${formatDate(wall)}, ${new Date(wall).toISOString().slice(11, 16)}`
}

/**
 * `untilWords` as a `<time>`, which page.client.ts writes again in the browser's own zone by the same rule
 * (local-times.client.ts, `data-local="until"`).
 */
export function untilWhen(endsAt: number, timeZone: string): string {
  return html`<time datetime="${new Date(endsAt).toISOString()}" data-local="until" title="${zoneWords(timeZone)}">${untilWords(endsAt, timeZone)}</time>`
}

/**
 * A form's reading with a chosen day that has already ended (where the form's `timeZone` says) among its
 * problems, so that the form says every problem at once; the service, which would refuse the day too, sees it
 * only once the rest is right.
 */
export function refuseEndedDay<T>(form: FormReading<T>, field: string, message: string): FormReading<T> {
  const day = form.values[field]
  // A day the form's schema refused (not a day, or no such date) is said as it says it.
  if (!day || (!form.ok && form.errors[field]) || !/^\d{4}-\d{2}-\d{2}$/.test(day)) return form
  if (!dayHasEnded(day, knownTimeZone(form.values.timeZone))) return form
  return { ok: false, values: form.values, errors: { ...(form.ok ? {} : form.errors), [field]: message } }
}
