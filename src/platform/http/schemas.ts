// Schemas shared by every resource: the `{ data }` and `{ data, pagination }` envelopes, the error body, and
// the bounds every path and page takes.
import { type TSchema, type TString, Type } from 'typebox'
import { invalid } from '../errors.ts'

export const DateTime = (description?: string) => Type.String({ format: 'date-time', description })

/** The last instant a four-digit ISO 8601 year can write. */
const LATEST_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/**
 * A body's date-time field as epoch ms. The schema has checked the date-time syntax; this catches what the
 * syntax lets through but no calendar has (a leap second), so it never becomes an Invalid Date, and an
 * offset that carries 9999-12-31 into year 10000, which could not be written back.
 */
export function dateTimeOf(value: string | null | undefined, field: string): number | null | undefined {
  if (value === undefined || value === null) return value
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) {
    throw invalid(`The request body "${field}" must be a valid ISO 8601 date-time.`, undefined, field)
  }
  if (ms > LATEST_DATE_MS) {
    throw invalid(
      `The request body "${field}" must be no later than ${new Date(LATEST_DATE_MS).toISOString()}.`,
      undefined,
      field,
    )
  }
  return ms
}

/**
 * What Coffer adds beyond the contract carries this mark in the OpenAPI document, on operations, fields and
 * parameters alike, and its description says so first, so that the reference page shows it too. A client
 * written from the contract alone never needs any of it.
 */
export const EXTENSION_MARK = 'x-coffer-extension'
export const EXTENSION_NOTE = 'Coffer extension, beyond the contract.'

/** `schema` marked as an extension (see EXTENSION_MARK). */
export const Extension = <T extends TSchema>(schema: T): T => {
  const { description } = schema as { description?: string }
  return {
    ...schema,
    [EXTENSION_MARK]: true,
    description: description ? `${EXTENSION_NOTE} ${description}` : EXTENSION_NOTE,
  } as T
}

/** The route schema properties that mark an operation as an extension; its description says so first. */
export const extensionOperation = (description: string) => ({
  [EXTENSION_MARK]: true,
  description: `**${EXTENSION_NOTE}** ${description}`,
})
export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({
          description: 'Machine-readable code; see the catalogue in the API description.',
        }),
        message: Type.String({
          description: 'What went wrong, naming the field and bound where there is one.',
        }),
        hint: Type.String({ description: 'What to do about it.' }),
        field: Type.Optional(
          Extension(
            Type.String({
              description:
                'The request field the error is about, as a path into the body (`submitterEmail`, `files[2].size`), where there is one.',
            }),
          ),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'Every failure uses this envelope.' },
)

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Data = <T extends TSchema>(schema: T) =>
  Type.Object({ data: schema }, { additionalProperties: false })

export const List = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      data: Type.Array(item),
      pagination: Type.Object(
        {
          nextCursor: Nullable(
            Type.String({
              description: 'Pass as `cursor` to get the next page; null when there are no more.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  )

/** A path parameter: an ID of 1 to `maxLength` characters (LIMITS in meta/capabilities.ts). */
export const IdParam = <K extends string>(name: K, maxLength = 128) =>
  Type.Object({ [name]: Type.String({ minLength: 1, maxLength }) } as { [P in K]: TString }, {
    additionalProperties: false,
  })

export const FolderIdValue = (description: string) =>
  Type.String({ minLength: 1, maxLength: 100, description })

export const PageQuery = (defaultLimit: number) => ({
  cursor: Type.Optional(
    Type.String({
      maxLength: 128,
      description: 'Opaque cursor from `pagination.nextCursor` of the previous page.',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 100,
      default: defaultLimit,
      description: `Page size (default ${defaultLimit}).`,
    }),
  ),
})

/** The error responses every authenticated operation may return (the catalogue in errors.ts). */
const ErrorRef = Type.Ref('Error')
export const ERROR_RESPONSES = {
  400: ErrorRef,
  401: ErrorRef,
  403: ErrorRef,
  404: ErrorRef,
  409: ErrorRef,
  429: ErrorRef,
  // Any other failure (413 body too large, 415 not JSON, 500, 503) uses the same envelope.
  default: ErrorRef,
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`)
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`)
const MS_PER_DAY = 86_400_000
/** Years 1970 to 9999: the dates Coffer stores. Others go through Date, which formats them differently. */
const LAST_MS = Date.UTC(10_000, 0, 1)

/**
 * Epoch milliseconds as `2024-01-31T12:00:00.000Z`, exactly as Date#toISOString, several times faster: a
 * page of files formats three timestamps per file, and Date's formatting was a tenth of a list's time.
 * The civil date comes from Howard Hinnant's days-from-civil inverse.
 */
export function toIso(ms: number): string {
  if (!(ms >= 0 && ms < LAST_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString()
  const days = Math.floor(ms / MS_PER_DAY)
  let rest = ms - days * MS_PER_DAY
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  )
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(millis)}Z`
}

export const toIsoOrNull = (ms: number | null) => (ms === null ? null : toIso(ms))
