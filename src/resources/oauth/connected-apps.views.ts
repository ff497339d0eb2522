// The account's connected applications (/account/apps): the OAuth clients it granted access, with their
// scopes and last use, each with a button that revokes it. A settings page of the account, drawn with the
// account pages' parts: oauth/ builds on accounts, never the reverse.
import { html } from 'ghtml'
import { csrfInput } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import { ACCOUNT_PATHS, scopeList, settingsPage, when } from '../accounts/account-pages.views.ts'
import type { ConnectedApp } from './connected-apps.service.ts'

export function appsPage(data: { nav: AppNav; apps: ConnectedApp[] }): Page {
  const { nav, apps } = data
  const list =
    apps.length === 0
      ? html`<p class="muted">No application has access to your account.</p>`
      : html`<ul class="items" aria-label="Connected applications">!${apps.map(
          (app) => html`<li class="item">
<div class="item-main">
<p class="item-title"><bdi>${app.name}</bdi></p>
!${app.uri ? html`<p class="item-meta"><bdi>${app.uri}</bdi></p>` : ''}
!${scopeList(app.scopes)}
<dl class="item-dates"><div><dt>Last used</dt><dd>!${when(app.lastUsedAt, 'Not yet')}</dd></div></dl>
</div>
<form method="post" action="${ACCOUNT_PATHS.revokeApp(app.grantId)}" class="inline-form">!${csrfInput(nav.csrfToken)}<button class="button danger" type="submit" aria-label="Revoke access of ${app.name}">Revoke access</button></form>
</li>`,
        )}</ul>`
  const body = html`<p class="muted">Applications you allowed to use your account through OAuth. Revoking one ends its access at once.</p>
!${list}`
  return settingsPage(nav, 'apps', 'Connected apps', body)
}
