import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.ts'

// Filled in by the rate-limit work.
export async function registerRateLimit(_app: FastifyInstance, _config: Config): Promise<void> {}
