// The authorization server's pages: the consent page (which application, which scopes, in plain words, each
// one a checkbox so a subset can be granted), and the device flow's pages (enter the code, confirm, done).
// Values from clients (their names and addresses) go through ghtml's escaping `${…}`. The device flow's
// forms are oidc-provider's own (its `xsrf` field and `user_code`), drawn here and read by the library.
import { html } from 'ghtml'
import { SCOPES, type Scope } from '../../platform/auth/scopes.ts'
import { csrfInput, type FormState, formError } from '../../platform/web/forms.ts'
import type { Page } from '../../platform/web/layout.ts'

/**
 * The scopes asked for, each a checkbox: all ticked at first, those sent when shown again (the form reader
 * joins a list with ", ", which no scope contains). A refusal marks each box and names the message.
 */
function scopeChecks(scopes: Scope[], form: FormState): string {
  const sent = form.values
  const ticked = (scope: Scope) => (sent ? (sent.scopes ?? '').split(', ').includes(scope) : true)
  const error = form.errors?.scopes
  const invalid = error ? html` aria-invalid="true" aria-describedby="field-scopes-error"` : ''
  return html`<fieldset class="field">
<legend>It asks to</legend>
<ul class="checks">!${scopes.map(
    (
      scope,
    ) => html`<li><label class="check"><input type="checkbox" name="scopes" value="${scope}"!${ticked(scope) ? ' checked' : ''}!${invalid}>
<span><span class="check-title">${SCOPES[scope]}</span><code>${scope}</code></span></label></li>`,
  )}</ul>
!${error ? html`<p class="field-error" id="field-scopes-error">${error}</p>` : ''}
<p class="hint">Untick what you do not want to allow. You can revoke access at any time under Account, Connected apps.</p>
</fieldset>`
}

export function consentPage(data: {
  csrfToken: string
  email: string
  client: { name: string; uri: string | undefined }
  /** Where the application sends the browser back to: its host, shown so a look-alike stands out. */
  redirectHost: string | undefined
  scopes: Scope[]
  action: string
  denyAction: string
  /** The form shown again, with what was wrong. */
  form?: FormState
}): Page {
  const { client } = data
  const main = html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<p class="eyebrow">Allow access</p>
<h1 id="page-title"><bdi>${client.name}</bdi> wants to use your Coffer account</h1>
<p class="muted">Signed in as <strong>${data.email}</strong>. !${client.uri ? html`The application’s site: <bdi class="break">${client.uri}</bdi>. ` : ''}!${data.redirectHost ? html`After you answer, you go back to <strong class="break"><bdi>${data.redirectHost}</bdi></strong>.` : ''}</p>
<form method="post" action="${data.action}" novalidate>
!${csrfInput(data.csrfToken)}
!${formError(data.form ?? {})}
!${scopeChecks(data.scopes, data.form ?? {})}
<div class="actions"><button class="button primary" type="submit">Allow</button>
<button class="button" type="submit" formaction="${data.denyAction}">Deny</button></div>
</form>
</div></section>`
  return { title: `Allow ${client.name} · Coffer`, main }
}

function deviceCard(title: string, body: string): string {
  return html`<section class="card narrow" aria-labelledby="page-title"><div class="card-body">
<p class="eyebrow">Connect a device</p>
<h1 id="page-title">${title}</h1>
!${body}
</div></section>`
}

export function userCodePage(data: { action: string; xsrf: string; error?: string }): Page {
  const body = html`<p class="muted">Enter the code your device or command-line tool shows.</p>
<form method="post" action="${data.action}" novalidate>
<input type="hidden" name="xsrf" value="${data.xsrf}">
!${data.error ? html`<p class="form-error" role="alert" id="code-error">${data.error}</p>` : ''}
<div class="field"><label for="user-code">Code</label>
<input id="user-code" class="code-input" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required!${data.error ? html` aria-invalid="true" aria-describedby="code-error"` : ''}></div>
<div class="actions"><button class="button primary" type="submit">Continue</button></div>
</form>`
  return { title: 'Sign in a device · Coffer', main: deviceCard('Sign in a device', body) }
}

export function confirmCodePage(data: {
  action: string
  xsrf: string
  clientName: string
  userCode: string
}): Page {
  const body = html`<p><strong><bdi>${data.clientName}</bdi></strong> asks to sign in with this code:</p>
<p class="user-code"><code>${data.userCode}</code></p>
<p class="muted">Continue only if your device shows the same code and you started this yourself.</p>
<form method="post" action="${data.action}">
<input type="hidden" name="xsrf" value="${data.xsrf}">
<input type="hidden" name="user_code" value="${data.userCode}">
<input type="hidden" name="confirm" value="yes">
<div class="actions"><button class="button primary" type="submit">Continue</button>
<button class="button" type="submit" name="abort" value="yes">Cancel</button></div>
</form>`
  return { title: 'Confirm the code · Coffer', main: deviceCard('Confirm the code', body) }
}

export function deviceDonePage(clientName: string): Page {
  const body = html`<p><bdi>${clientName}</bdi> is signed in. You can close this page and go back to your device.</p>`
  return { title: 'Device signed in · Coffer', main: deviceCard('All set', body) }
}
