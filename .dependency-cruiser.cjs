// The import rules of src/, checked by `npm run check` (docs/architecture.md, "Layers"): routes → services →
// repositories → db, each resource in its own folder. Type imports count as imports, except where a rule says
// otherwise: a type leaves nothing behind at run time, so a layer may name the types of the one below it.
const { readdirSync, readFileSync } = require('node:fs')
const path = require('node:path')

/** Every folder of src/resources/ is a resource: it falls under the resources' rules the moment it exists. */
const RESOURCE_FOLDERS = readdirSync(path.join(__dirname, 'src/resources'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
const RESOURCES = `resources/(${RESOURCE_FOLDERS.join('|')})`

/**
 * The resources from the bottom up, in the order of the modules' list (src/modules.ts), which wiring.ts builds
 * them in: each may import those before it, never those after it, so no two resources import each other
 * (docs/architecture.md, "Layers"). A resource folder without a module in that list stops the check.
 */
const MODULES_LIST = readFileSync(path.join(__dirname, 'src/modules.ts'), 'utf8')
const folderOfModule = new Map(
  [...MODULES_LIST.matchAll(/import \{ (\w+) \} from '\.\/(?:resources|clients)\/([\w-]+)\//g)].map(
    ([, name, folder]) => [name, folder],
  ),
)
const RESOURCE_ORDER = MODULES_LIST.slice(MODULES_LIST.indexOf('export const modules'))
  .match(/= \[([^\]]*)\]/)[1]
  .split(',')
  .map((name) => folderOfModule.get(name.trim()))
  .filter((folder) => RESOURCE_FOLDERS.includes(folder))
const unlisted = RESOURCE_FOLDERS.filter((folder) => !RESOURCE_ORDER.includes(folder))
if (unlisted.length > 0) {
  throw new Error(`List the module of ${unlisted.join(', ')} in src/modules.ts.`)
}
/** One rule per resource: it imports nothing of the resources after it in the list, types included. */
const ONE_WAY_RULES = RESOURCE_ORDER.slice(0, -1).map((resource, index) => ({
  name: `resources-point-down-from-${resource}`,
  severity: 'error',
  comment:
    "A resource builds on the resources before it in the modules' list (src/modules.ts), never on those after it: no two resources import each other, types included.",
  from: { path: `^src/resources/${resource}/` },
  to: { path: `^src/resources/(${RESOURCE_ORDER.slice(index + 1).join('|')})/` },
}))
/** The modules of a resource that run its domain rules: services and the background jobs. */
const SERVICES = `^src/${RESOURCES}/.+[.](service|job)[.]ts$`
const TOP = '^src/(app|wiring|modules|server)[.]ts$'

module.exports = {
  forbidden: [
    ...ONE_WAY_RULES,
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycle anywhere in src/, type imports included: a cycle is a tangle a reader must hold whole.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'storage-knows-no-resource',
      severity: 'error',
      comment:
        'db/, blob/, jobs/ (the schedules of background jobs) and mail/ (the outbox) serve every resource and know none of them, nor anything built on them.',
      from: { path: '^src/platform/(db|blob|jobs|mail)/' },
      to: { path: ['^src/(resources|clients|admin-cli)/', '^src/platform/(http|auth|web)/', TOP] },
    },
    {
      name: 'http-knows-no-resource',
      severity: 'error',
      comment:
        'http/ holds what every route shares (errors, validation, auth, rate limits) and knows no resource.',
      from: { path: '^src/platform/http/' },
      to: { path: ['^src/(resources|clients|admin-cli)/', '^src/platform/web/', TOP] },
    },
    {
      name: 'web-knows-no-resource',
      severity: 'error',
      comment:
        'web/ is what every page shares (layout, assets, page headers, error pages) and knows no resource; resources bring their own pages.',
      from: { path: '^src/platform/web/' },
      to: {
        path: ['^src/(resources|admin-cli)/', TOP],
        // The build bundles the browser's code, and the SDK is part of it.
        pathNot: '^src/clients/sdk/(?!generate-types)',
      },
    },
    {
      name: 'browser-code-stands-alone',
      severity: 'error',
      comment:
        'Browser modules (*.client.ts, bundled by web/build.ts) run in the browser: they import only each other, rules shared with the server (*.shared.ts), the SDK (which talks HTTP) and browser packages, never server code.',
      from: { path: '[.]client[.]ts$' },
      to: { path: '^src/', pathNot: ['[.](client|shared)[.]ts$', '^src/clients/sdk/(?!generate-types)'] },
    },
    {
      name: 'shared-rules-import-only-shared-rules',
      severity: 'error',
      comment:
        'Rules both sides check (*.shared.ts: the server, and the browser before it sends anything) run in both places, so they import nothing but each other.',
      from: { path: '[.]shared[.]ts$' },
      to: { path: '.*', pathNot: '[.]shared[.]ts$' },
    },
    {
      name: 'sdk-stands-alone',
      severity: 'error',
      comment:
        'The SDK (coffer/client) runs in other programs and in browsers, and talks to the server over HTTP: it imports only itself and packages. Its type generator (generate-types.ts) builds the app for its OpenAPI document, and is no part of it.',
      from: { path: '^src/clients/sdk/', pathNot: '^src/clients/sdk/generate-types[.]ts$' },
      to: { path: '^src/', pathNot: '^src/clients/sdk/' },
    },
    {
      name: 'clients-talk-http',
      severity: 'error',
      comment:
        "The coffer command and the MCP tools are clients of the API: they use the SDK, each other (coffer mcp serves the tools), shared formatting, the password prompt and the error codes, never the server's own modules (the route that serves the tools over HTTP, mcp.routes.ts, is a route like any other).",
      from: { path: '^src/clients/(coffer-cli/|mcp/(tools|limits)[.]ts$)' },
      to: {
        path: '^src/',
        pathNot: [
          '^src/clients/coffer-cli/',
          '^src/clients/mcp/(tools|limits)[.]ts$',
          '^src/clients/sdk/(?!generate-types)',
          '[.]shared[.]ts$',
          '^src/admin-cli/password[.]ts$',
          '^src/platform/errors[.]ts$',
        ],
      },
    },
    {
      name: 'server-code-runs-no-browser-code',
      severity: 'error',
      comment: 'The server serves browser modules as built assets; it never imports them.',
      from: { path: '^src/', pathNot: '[.]client[.]ts$' },
      to: { path: '[.]client[.]ts$' },
    },
    {
      name: 'repositories-know-nothing-above',
      severity: 'error',
      comment:
        'A repository holds SQL and row mapping; it calls no service and knows no route, schema or request.',
      from: { path: '[.]repository[.]ts$' },
      to: {
        path: ['[.](service|routes|schemas|views)[.]ts$', '[.]job[.]ts$', '^src/platform/(http|web)/', TOP],
      },
    },
    {
      name: 'services-see-no-http',
      severity: 'error',
      comment:
        'A service holds the domain rules and never sees a request: no route, schema, view, http/, web/ or Fastify.',
      from: { path: SERVICES },
      to: { path: ['[.](routes|schemas|views)[.]ts$', '^src/platform/(http|web)/', 'node_modules/fastify/'] },
    },
    {
      name: 'services-reach-db-for-transactions-only',
      severity: 'error',
      comment:
        'A service reads and writes through repositories. Of db/ it may use the transaction, page and constraint-error types, and group commit (write-batch) to commit what requests write together.',
      from: { path: SERVICES },
      to: {
        path: '^src/platform/db/',
        pathNot: '^src/platform/db/(database|errors|pagination|write-batch)[.]ts$',
      },
    },
    {
      name: 'sql-lives-in-repositories',
      severity: 'error',
      comment:
        "Only db/ and the repositories (and the files search they delegate to) build SQL with Kysely; a resource's tables (*.tables.ts) name its column types.",
      from: {
        path: '^src/',
        pathNot: [
          '^src/platform/db/',
          '[.]repository[.]ts$',
          '[.]tables[.]ts$',
          '^src/resources/files/search/name-search[.]ts$',
        ],
      },
      to: { path: 'node_modules/kysely/' },
    },
    {
      name: 'routes-call-services',
      severity: 'error',
      comment:
        'Routes, schemas and views validate, authorize, call a service and serialize or render. They may name the types a repository returns, never run it, nor reach db/.',
      from: { path: '[.](routes|schemas|views)[.]ts$' },
      to: { path: ['[.]repository[.]ts$', '^src/platform/db/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'routes-know-no-composition-root',
      severity: 'error',
      comment:
        "Resources, http/ and web/ get what they need handed to them (routes.ts names its types); only the top files assemble the application (and the tools that build it: the admin CLI, the SDK's type generator), so nothing below imports them, not even for a type.",
      from: { path: '^src/', pathNot: [TOP, '^src/admin-cli/', '^src/clients/sdk/generate-types[.]ts$'] },
      to: { path: TOP },
    },
    {
      name: 'no-service-of-another-resource',
      severity: 'error',
      comment:
        "A resource reads another's data through that resource's repository and calls its service as wiring.ts hands it over: it imports at most its type.",
      from: { path: `^src/${RESOURCES}/` },
      to: {
        path: `^src/${RESOURCES}/.+[.]service[.]ts$`,
        pathNot: '^src/resources/$1/',
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'no-routes-of-another-module',
      severity: 'error',
      comment:
        'Routes are leaves: only app.ts registers them; what routes share lives in schemas, http/ or download.ts.',
      from: { path: '^src/((?:platform|resources|clients)/[^/]+|admin-cli)/', pathNot: TOP },
      to: { path: '[.]routes[.]ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'src-stands-alone',
      severity: 'error',
      comment: 'The application never imports its tests or benchmarks.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that cannot be resolved is a typo or a missing dependency.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.json'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
}
