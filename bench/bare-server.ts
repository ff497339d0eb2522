// The baseline of the API benchmark: bare Fastify answering one route with a fixed JSON body, no auth,
// no database. Started by bench/api.ts with PORT and BODY in the environment.
import Fastify from 'fastify'

const body = JSON.parse(process.env.BODY ?? '{}')
const app = Fastify({ logger: false })
app.get('/', async () => body)
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
