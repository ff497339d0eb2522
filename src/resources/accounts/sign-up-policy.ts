// Who may make themselves an account (SIGNUP, SIGNUP_EMAIL_DOMAINS): one rule for the sign-up page and for single
// sign-on. An admin's invitation and the admin command make accounts whatever it says.
import type { SignUpConfig } from '../../platform/config.ts'
import { invalid } from '../../platform/errors.ts'

/** Why the (normalised) `email` may not make itself an account; undefined when it may. */
export function signUpRefusal(policy: SignUpConfig, email: string): string | undefined {
  if (policy.policy !== 'open')
    return 'Accounts on this server are made by its admins, or by their invitation.'
  const domain = email.slice(email.lastIndexOf('@') + 1)
  if (policy.emailDomains !== undefined && !policy.emailDomains.includes(domain)) {
    return `Accounts on this server are for addresses at ${policy.emailDomains.join(', ')}.`
  }
  return undefined
}

/** A 400 naming the email field when `email` may not make itself an account. */
export function assertSignUpAllowed(policy: SignUpConfig, email: string): void {
  const refusal = signUpRefusal(policy, email)
  if (refusal)
    throw invalid(refusal, 'Use an address the server takes, or ask an admin for an invitation.', 'email')
}
