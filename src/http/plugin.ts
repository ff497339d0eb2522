import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../config.ts'
import type { Services } from '../services.ts'

export interface RouteDeps {
  services: Services
  config: Config
}

/** The shape of every resource's routes module. */
export type Routes = FastifyPluginAsyncTypebox<RouteDeps>
