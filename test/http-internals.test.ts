// Unit checks of two speed-ups whose effects the integration tests cannot see directly.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withNullable } from '../src/http/serialization.ts'

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
