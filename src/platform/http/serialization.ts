// Response serialization with fast-json-stringify, on schemas rewritten for speed. The documented schemas
// say "X or null" as `anyOf: [X, null]`, which fast-json-stringify serializes by running a full validator
// of X on every value to pick the branch; `nullable: true` on X says the same and costs one comparison.
import build, { type Schema as SerializerSchema } from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'

type Schema = Record<string, unknown>

const isNullSchema = (s: unknown) =>
  typeof s === 'object' && s !== null && (s as Schema).type === 'null' && Object.keys(s).length === 1

/** Keys that only describe a schema: a union carrying them may still be rewritten. */
const isAnnotation = (key: string) => key === 'description' || key.startsWith('x-')

/** A deep copy of `schema` with every two-branch `anyOf` whose other branch is null made `nullable`. */
export function withNullable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withNullable)
  if (typeof schema !== 'object' || schema === null) return schema
  const { anyOf, ...rest } = schema as Schema
  if (Array.isArray(anyOf) && anyOf.length === 2 && Object.keys(rest).every(isAnnotation)) {
    const other = anyOf.find((branch) => !isNullSchema(branch))
    if (other && anyOf.some(isNullSchema))
      return { ...(withNullable(other) as Schema), ...rest, nullable: true }
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withNullable(value)]))
}

/**
 * The schema controller's serializer factory: Fastify calls it per plugin context with the shared schemas.
 * Each serializer is built when its route first answers with that status, not at start: building all of them
 * was most of a server's start (about 2 s of CPU for some 300 route and status pairs, most never used by a
 * given process), and a server that starts fast is one a fleet can add or restart without a gap.
 */
export function buildSerializer(
  sharedSchemas: Record<string, unknown> = {},
): FastifySerializerCompiler<unknown> {
  let schemas: Record<string, Schema> | undefined
  return ({ schema }) => {
    let serialize: ((data: unknown) => string) | undefined
    return (data) => {
      if (serialize === undefined) {
        schemas ??= withNullable(sharedSchemas) as Record<string, Schema>
        const own = schema as Schema
        // A shared schema serialized as a route's own must not also be passed as an external one.
        const external = { ...schemas }
        if (typeof own.$id === 'string') delete external[own.$id]
        serialize = build(withNullable(own) as SerializerSchema, {
          schema: external as unknown as Record<string, SerializerSchema>,
        })
      }
      return serialize(data)
    }
  }
}
