// Schemas shared by every resource: the envelopes of spec section 2.1 and the error body of section 7.
import { type TSchema, type TString, Type } from 'typebox'

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
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'Every failure uses this envelope.' },
)

export const DateTime = (description?: string) => Type.String({ format: 'date-time', description })
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

/** Path parameter bounds of spec section 8. */
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

/** The error responses every authenticated operation may return (spec section 7). */
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

export const toIso = (ms: number) => new Date(ms).toISOString()
export const toIsoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
