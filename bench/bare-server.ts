// The baseline of the benchmarks: bare Fastify answering one route with a fixed body from memory, no auth,
// no database. Started with PORT and BODY in the environment; BODY is JSON unless CONTENT_TYPE says
// otherwise (bench/pages.ts sends a share page's HTML). A POST to the same route answers 204: a webhook receiver
// that is never the bottleneck (bench/pages.ts).
import Fastify from 'fastify'

const contentType = process.env.CONTENT_TYPE
const body = contentType ? (process.env.BODY ?? '') : JSON.parse(process.env.BODY ?? '{}')
const app = Fastify({ logger: false })
app.get('/', async (_request, reply) => (contentType ? reply.type(contentType).send(body) : body))
app.post('/', async (_request, reply) => reply.code(204).send())
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
