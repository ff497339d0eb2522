// A typed client of Coffer's API: types generated from the server's own OpenAPI document by
// openapi-typescript, requests made by openapi-fetch, so paths, parameters, bodies and responses are checked
// by the compiler. A test generates the types from a running server, type-checks this file and runs it.
//   npx openapi-typescript http://localhost:8080/api/v1/openapi.json -o examples/coffer-api.d.ts
//   COFFER_URL=http://localhost:8080 COFFER_API_KEY=coffer_... node examples/typed-client.ts Invoices
// Prints the new folder's ID and how many files it holds.
import createClient from 'openapi-fetch'
import type { paths } from './coffer-api.d.ts'

const client = createClient<paths>({
  baseUrl: `${process.env.COFFER_URL}/api/v1`,
  headers: { authorization: `Bearer ${process.env.COFFER_API_KEY}` },
})

const created = await client.POST('/folders', { body: { name: process.argv[2] ?? 'Invoices' } })
// Every failure has the same envelope: { error: { code, message, hint } }.
if (created.error) throw new Error(`${created.error.error.code}: ${created.error.error.message}`)
const folder = created.data.data

const listed = await client.GET('/files', { params: { query: { folderId: folder.id, limit: 10 } } })
if (listed.error) throw new Error(`${listed.error.error.code}: ${listed.error.error.message}`)
console.log(folder.id, listed.data.data.length)
