import assert from 'node:assert/strict'
import { test } from 'node:test'
import { newId, newPublicId } from '../src/platform/ids.ts'

test('IDs of one millisecond sort in the order they were made; later milliseconds sort later', () => {
  const now = Date.now()
  const same = Array.from({ length: 1000 }, () => newId('fil', now))
  assert.deepEqual([...same].sort(), same)
  assert.equal(new Set(same).size, same.length)
  const later = newId('fil', now + 1)
  assert.ok(later > (same.at(-1) as string))
  // An explicit earlier time still sorts by its time.
  assert.ok(newId('fil', now - 1) < (same[0] as string))
  for (const id of [...same, later]) assert.match(id, /^fil_[0-9a-hjkmnp-tv-z]{26}$/)
})

test('public IDs are 160 random bits in base32', () => {
  const ids = Array.from({ length: 100 }, newPublicId)
  assert.equal(new Set(ids).size, 100)
  for (const id of ids) assert.match(id, /^[0-9a-hjkmnp-tv-z]{32}$/)
})
