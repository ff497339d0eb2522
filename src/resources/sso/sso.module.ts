// Single sign-on with an external OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): the
// start of a sign-in and the provider's callback (sso.routes.ts), and the service that redeems the code and finds,
// makes or refuses the account (sso.service.ts), with the provider's identity each account signed in with
// (sso_identities, migration 0036). A flow in progress is a sealed cookie (sso-flow.ts), stored nowhere. Without a
// provider it serves nothing.
import type { Module } from '../../module.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import { ssoRoutes } from './sso.routes.ts'
import { SsoService } from './sso.service.ts'
import { SsoFlows } from './sso-flow.ts'
import { SsoIdentitiesRepository } from './sso-identities.repository.ts'

declare module '../../module.ts' {
  interface Repositories {
    ssoIdentities: SsoIdentitiesRepository
  }
  interface Services {
    /** Sign-in with the provider; undefined without one (OIDC_ISSUER unset). */
    sso: SsoService | undefined
  }
}

export const ssoModule: Module = {
  pageRoutes: [ssoRoutes],
  repositories: (db) => ({ ssoIdentities: new SsoIdentitiesRepository(db) }),
  wire: ({ config, urls, serverSecrets }, { repositories, services }) => ({
    services: {
      sso:
        config.oidc &&
        new SsoService({
          oidc: config.oidc,
          signUpPolicy: config.signUp,
          redirectUri: `${urls.origin}${ACCOUNT_PATHS.ssoCallback}`,
          flows: new SsoFlows(serverSecrets),
          accounts: services.accounts,
          accountsRepository: repositories.accounts,
          identities: repositories.ssoIdentities,
        }),
    },
  }),
}
