// The pages of a sign-in with the provider that did not sign anyone in: what happened, in plain words, and the
// way back to the sign-in page. Never a code, a token or the state: only the provider's name, and the email
// address the provider gave when it is the reason (the policy refuses it).
import { html } from 'ghtml'
import type { Page } from '../../platform/web/layout.ts'
import type { Web } from '../../platform/web/web.ts'
import { ACCOUNT_PATHS } from '../accounts/account-pages.views.ts'
import type { SsoRefusal } from './sso.service.ts'

interface RefusalText {
  status: number
  title: string
  message: string
}

/** The status, title and words of each refusal. */
export function refusalText(refusal: SsoRefusal, provider: string): RefusalText {
  switch (refusal.kind) {
    case 'unreachable':
      return {
        status: 503,
        title: `${provider} cannot be reached`,
        message: `Coffer could not reach ${provider} to sign you in. It may be down for a moment: try again in a few minutes. If it keeps happening, tell the people who run this server.`,
      }
    case 'state':
      return {
        status: 400,
        title: 'This sign-in has expired',
        message: `This sign-in was not started in this browser, took longer than 10 minutes, or its answer from ${provider} was changed on the way. Nothing was signed in. Start again from the sign-in page.`,
      }
    case 'code':
      return {
        status: 400,
        title: 'This sign-in was already used',
        message: `${provider} did not accept this sign-in: its answer was used already or is too old. If you went back or reloaded the page, that is why. Start again from the sign-in page.`,
      }
    case 'denied':
      return {
        status: 403,
        title: `${provider} did not sign you in`,
        message: `The sign-in was cancelled at ${provider}, or ${provider} refused it. Start again from the sign-in page, or ask the people who run ${provider}.`,
      }
    case 'invalid':
      return {
        status: 502,
        title: `${provider}'s answer could not be checked`,
        message: `Coffer signs in only with an answer it can check as ${provider}'s own, for this server, and current. This one was not, so nothing was signed in. Try again; if it keeps happening, tell the people who run this server.`,
      }
    case 'unverified':
      return {
        status: 403,
        title: 'Your email address is not verified',
        message: `${provider} did not give Coffer an email address it has verified, and accounts here are matched by email. Verify your address at ${provider}, then sign in again.`,
      }
    case 'sign-up':
      return {
        status: 403,
        title: 'No account for this address',
        message: `There is no Coffer account for ${refusal.email}, and one cannot be made here by signing in. ${refusal.reason}`,
      }
    case 'disabled':
      return {
        status: 403,
        title: 'This account is disabled',
        message: `Your Coffer account was disabled by an admin of this server. Ask them to enable it again.`,
      }
    case 'other-identity':
      return {
        status: 403,
        title: 'This account is someone else’s',
        message: `The Coffer account for ${refusal.email} signs in with another ${provider} user, who had this address before. An address that passed to someone else at ${provider} does not open its account here: ask an admin of this server.`,
      }
  }
}

/** The refusal's page: a notice with its words and the way back to sign in. */
export function refusalPage(web: Web, refusal: SsoRefusal, provider: string): { status: number; page: Page } {
  const text = refusalText(refusal, provider)
  const back = html`<div class="actions sso-back"><a class="button primary" href="${ACCOUNT_PATHS.signIn}">Back to sign in</a></div>`
  return {
    status: text.status,
    page: {
      title: `${text.title} · Coffer`,
      main: web.notice({ title: text.title, message: text.message, extra: back }),
    },
  }
}
