// The page an invitation links to (routes in invitation-pages.routes.ts): who invited, as what, and the form that
// makes the account. An invitation for an address shows that address, fixed; one the admin copied asks for it.
// Every value from a user goes through ghtml's escaping `${…}`.
import { html } from 'ghtml'
import { formatDateTime } from '../../platform/web/format.ts'
import { csrfInput, type FormState, field, formError } from '../../platform/web/forms.ts'
import type { Page } from '../../platform/web/layout.ts'
import { MIN_PASSWORD_LENGTH } from './accounts.service.ts'
import type { Invitation } from './invitations.repository.ts'

export const INVITATION_PATH = '/account/invite'

export function invitationPage(
  state: FormState & { csrfToken: string; action: string; invitation: Invitation },
): Page {
  const { invitation } = state
  const email = invitation.email
  const values = email === null ? state.values : { ...state.values, email }
  const role =
    invitation.role === 'admin'
      ? html`<p class="muted">You are invited as an <strong>admin</strong>: you will manage the accounts of this server too.</p>`
      : ''
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<h1 id="page-title">Make your Coffer account</h1>
<p class="muted">You were invited to keep and share files on this server. The invitation works once, until <time datetime="${new Date(invitation.expiresAt).toISOString()}" data-local>${formatDateTime(invitation.expiresAt)}</time>.</p>
!${role}
<form method="post" action="${state.action}" novalidate>
!${csrfInput(state.csrfToken)}
!${formError(state)}
!${field(
    { ...state, values },
    {
      name: 'email',
      label: 'Email',
      type: 'email',
      autocomplete: 'username',
      maxLength: 254,
      readOnly: email !== null,
      hint: email === null ? undefined : 'The address you were invited at.',
    },
  )}
!${field(state, { name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password', hint: `At least ${MIN_PASSWORD_LENGTH} characters.` })}
!${field(state, { name: 'confirm', label: 'Password again', type: 'password', autocomplete: 'new-password' })}
<div class="actions"><button class="button primary" type="submit">Create account</button></div>
</form>
</div></section>`
  return { title: 'Make your account · Coffer', main }
}
