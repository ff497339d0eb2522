// The SDK's types (src/clients/sdk/api.d.ts) are what the server's OpenAPI document gives today: a field renamed,
// added or retyped in a schema changes the document, and this fails until the types are generated again
// (`npm run sdk:types`), after which the compiler checks every use of them (`npm run check`).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { generatedTypes, TYPES_FILE } from '../src/clients/sdk/generate-types.ts'

test('src/clients/sdk/api.d.ts is what the OpenAPI document gives', async () => {
  const committed = await readFile(TYPES_FILE, 'utf8')
  const current = await generatedTypes()
  assert.ok(committed === current, 'src/clients/sdk/api.d.ts differs from the API: run `npm run sdk:types`')
  // And it types what the SDK's users read: a File's fields, with their types.
  assert.match(current, /File: \{\n\s+id: string;\n\s+name: string;/)
})
