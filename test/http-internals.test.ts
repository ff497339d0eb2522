// Unit checks of speed-ups whose effects the integration tests cannot see directly, and of the HTTP-date reader
// every conditional request goes through.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { batchedLookup } from '../src/platform/db/read-path/batched-lookup.ts'
import { httpDate, parseHttpDate } from '../src/platform/http/http-date.ts'
import { toIso } from '../src/platform/http/schemas.ts'
import { withNullable } from '../src/platform/http/serialization.ts'

test('withNullable turns "X or null" into a nullable X, and leaves other unions alone', () => {
  const schema = {
    type: 'object',
    properties: {
      when: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }], description: 'd' },
      folder: { anyOf: [{ type: 'null' }, { $ref: 'Folder' }] },
      either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      three: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] },
    },
  }
  assert.deepEqual(withNullable(schema), {
    type: 'object',
    properties: {
      when: { type: 'string', format: 'date-time', description: 'd', nullable: true },
      folder: { $ref: 'Folder', nullable: true },
      either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      three: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] },
    },
  })
  assert.deepEqual(schema.properties.when.anyOf.length, 2, 'the documented schema is not changed')
})

test('toIso formats exactly as Date#toISOString', () => {
  const edges = [
    0,
    1,
    999,
    86_399_999,
    86_400_000,
    Date.UTC(2000, 1, 29, 12),
    Date.UTC(2100, 1, 28, 23, 59, 59, 999),
    Date.UTC(2100, 2, 1),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    // Outside the fast path's range or not whole milliseconds: Date's own formatting.
    Date.UTC(10_000, 0, 1),
    -1,
    1.5,
  ]
  const random = Array.from({ length: 100_000 }, () => Math.floor(Math.random() * Date.UTC(10_000, 0, 1)))
  for (const ms of [...edges, ...random]) assert.equal(toIso(ms), new Date(ms).toISOString(), String(ms))
})

test('batchedLookup: one load per turn, at most 500 ids each; a failed load fails its callers', async () => {
  const loads: string[][] = []
  const lookUp = batchedLookup(async (ids: string[]) => {
    loads.push(ids)
    if (ids.includes('bad')) throw new Error('database down')
    return ids.filter((id) => id !== 'missing').map((id) => ({ id, value: id.toUpperCase() }))
  }, 500)
  const found = await Promise.all([lookUp('a'), lookUp('b'), lookUp('a'), lookUp('missing')])
  assert.deepEqual(found, [
    { id: 'a', value: 'A' },
    { id: 'b', value: 'B' },
    { id: 'a', value: 'A' },
    undefined,
  ])
  assert.deepEqual(loads, [['a', 'b', 'missing']])

  loads.length = 0
  const many = Array.from({ length: 1200 }, (_, i) => `id${i}`)
  const rows = await Promise.all(many.map((id) => lookUp(id)))
  assert.deepEqual(
    rows.map((row) => row?.id),
    many,
  )
  assert.deepEqual(
    loads.map((ids) => ids.length),
    [500, 500, 200],
  )

  loads.length = 0
  const failed = lookUp('bad')
  await assert.rejects(failed, /database down/)
  assert.deepEqual(await lookUp('c'), { id: 'c', value: 'C' }, 'the next turn starts afresh')
})

test('HTTP dates: the three forms of RFC 9110 and nothing else', () => {
  const when = Date.UTC(1994, 10, 6, 8, 49, 37)
  assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), when)
  assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), when)
  assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), when)
  assert.equal(parseHttpDate(httpDate(when)), when)
  // A two-digit year is at most 50 years ahead.
  const nextYear = (new Date().getUTCFullYear() + 1) % 100
  assert.equal(
    new Date(
      parseHttpDate(`Monday, 01-Jan-${String(nextYear).padStart(2, '0')} 00:00:00 GMT`) ?? 0,
    ).getUTCFullYear(),
    new Date().getUTCFullYear() + 1,
  )
  for (const refused of [
    '1994-11-06T08:49:37.000Z',
    'Nov 06 1994 08:49:37 GMT',
    '06 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'Sun, 06 Nov 1994 08:49:37 +0000',
    'sun, 06 nov 1994 08:49:37 gmt',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun, 31 Apr 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Nov 1994 08:49:60 GMT',
    ' Sun, 06 Nov 1994 08:49:37 GMT',
    '',
  ]) {
    assert.equal(parseHttpDate(refused), undefined, refused)
  }
})
