// The MCP server, served over HTTP at /mcp: its tools call the API in this process.
import type { Module } from '../../module.ts'
import { mcpRoutes } from './mcp.routes.ts'

export const mcpModule: Module = { pageRoutes: [mcpRoutes] }
