import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EpochCache } from '../src/platform/db/read-path/epoch-cache.ts'

const cache = (maxEntries = 3) => new EpochCache<string>({ maxEntries, maxAgeMs: 1000 })

test('an entry is served only in the epoch it was read in, and only while younger than the maximum age', () => {
  const c = cache()
  c.set('a', 'A', 1, 0)
  assert.equal(c.get('a', 1, 999), 'A')
  assert.equal(c.get('a', 2, 999), undefined, 'another epoch')
  assert.equal(c.get('a', 1, 999), undefined, 'a stale entry is dropped, not kept for its epoch to return')
  c.set('b', 'B', 1, 0)
  assert.equal(c.get('b', 1, 1000), undefined, 'too old')
  c.set('n', 'N', Number.NaN, 0)
  assert.equal(c.get('n', Number.NaN, 0), undefined, 'nothing is stored while changes are unknown')
})

test('when full, the entry used least recently goes first', () => {
  const c = cache(3)
  for (const key of ['a', 'b', 'c']) c.set(key, key.toUpperCase(), 1, 0)
  assert.equal(c.get('a', 1, 0), 'A')
  c.set('d', 'D', 1, 0)
  assert.equal(c.get('b', 1, 0), undefined, 'b was the least recently used')
  for (const key of ['a', 'c', 'd']) assert.equal(c.get(key, 1, 0), key.toUpperCase())
  // Storing a key again refreshes it rather than adding a second entry.
  c.set('a', 'A2', 2, 0)
  c.set('e', 'E', 1, 0)
  assert.equal(c.get('c', 1, 0), undefined)
  assert.equal(c.get('a', 2, 0), 'A2')
  assert.equal(c.get('d', 1, 0), 'D')
  assert.equal(c.get('e', 1, 0), 'E')
})

test('entries can be deleted by key or by value', () => {
  const c = cache(5)
  for (const key of ['a', 'b', 'c', 'd']) c.set(key, key, 1, 0)
  c.delete('a')
  c.deleteWhere((value) => value === 'c' || value === 'd')
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((key) => c.get(key, 1, 0)),
    [undefined, 'b', undefined, undefined],
  )
  // The order of use survives the deletions: filling up evicts b only after the newer ones.
  for (const key of ['e', 'f', 'g', 'h', 'i']) c.set(key, key, 1, 0)
  assert.equal(c.get('b', 1, 0), undefined)
  for (const key of ['e', 'f', 'g', 'h', 'i']) assert.equal(c.get(key, 1, 0), key)
})
