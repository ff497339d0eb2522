// Single sign-on with an external OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): the
// start of a sign-in and the provider's callback (sso.routes.ts), and the service that redeems the code and finds,
// makes or refuses the account (sso.service.ts). Nothing is stored but what accounts store: a flow in progress
// is a sealed cookie (sso-flow.ts). Without a provider it builds nothing and serves nothing.
import type { Module } from '../../module.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import { ssoRoutes } from './sso.routes.ts'
import { SsoService } from './sso.service.ts'
import { SsoFlows } from './sso-flow.ts'

declare module '../../module.ts' {
  interface Services {
    /** Sign-in with the provider; undefined without one (OIDC_ISSUER unset). */
    sso: SsoService | undefined
  }
}

export const ssoModule: Module = {
  pageRoutes: [ssoRoutes],
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
        }),
    },
  }),
}
