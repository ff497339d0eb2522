// The webhook pages of the account settings (routes in webhooks-app.routes.ts): the endpoints with a form to add
// one, and an endpoint's page with its recent deliveries. A new or rotated secret is shown once, in the answer
// to the POST that made it, as an API key's is. Every value from a user goes through ghtml's escaping `${…}`.
import { html } from 'ghtml'
import { csrfInput, type FormState, field, formError, notice } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import { ACCOUNT_PATHS, settingsPage, when } from '../accounts/account-pages.views.ts'
import { ALL_EVENT_TYPES, EVENT_TYPES } from './event-types.ts'
import type { Delivery } from './events.repository.ts'
import type { WebhookEndpoint } from './webhooks.repository.ts'
import { DESCRIPTION_MAX_LENGTH } from './webhooks.schemas.ts'

export const WEBHOOK_PATHS = {
  list: ACCOUNT_PATHS.webhooks,
  view: (id: string) => `${ACCOUNT_PATHS.webhooks}/${id}`,
  action: (id: string, action: 'ping' | 'enable' | 'disable' | 'rotate' | 'delete') =>
    `${ACCOUNT_PATHS.webhooks}/${id}/${action}`,
  retry: (id: string, deliveryId: string) => `${ACCOUNT_PATHS.webhooks}/${id}/deliveries/${deliveryId}/retry`,
} as const

/** A secret shown this once, with a button to copy it (page.client.ts shows the button where it can copy). */
function secretBox(title: string, secret: string): string {
  return html`<div class="secret-box" role="status" tabindex="-1" id="new-secret">
<h2>${title}</h2>
<p>Copy it now: it will not be shown again. Your receiver verifies each delivery’s <code>webhook-signature</code> with it, using a Standard Webhooks library.</p>
<div class="secret-row"><code class="secret" id="new-secret-value">${secret}</code>
<button class="button" type="button" data-copy="${secret}" data-copy-done="Secret copied to the clipboard." hidden>Copy secret</button></div>
<p class="toast" data-copy-status aria-live="polite"></p>
</div>`
}

/** Whether the endpoint receives events, as a badge; none while all is well. */
function stateBadge(endpoint: WebhookEndpoint): string {
  if (!endpoint.isActive) return html` <span class="badge">Disabled</span>`
  if (endpoint.failingSince !== null) return html` <span class="badge badge-warn">Failing</span>`
  return ''
}

function eventTags(endpoint: WebhookEndpoint): string {
  return html`<ul class="scope-tags" aria-label="Events">!${endpoint.events.map((type) => html`<li><code>${type}</code></li>`)}</ul>`
}

function endpointRow(endpoint: WebhookEndpoint): string {
  return html`<li class="item${endpoint.isActive ? '' : ' is-inactive'}">
<div class="item-main">
<p class="item-title"><a href="${WEBHOOK_PATHS.view(endpoint.id)}"><bdi>${endpoint.description ?? endpoint.url}</bdi></a>!${stateBadge(endpoint)}</p>
!${endpoint.description ? html`<p class="item-meta"><code>${endpoint.url}</code></p>` : ''}
!${eventTags(endpoint)}
</div>
</li>`
}

/** Every event type as a checkbox; ticked: what was sent when the form is shown again, else none. */
function eventCheckboxes(state: FormState): string {
  const checked = new Set((state.values?.events ?? '').split(', '))
  const error = state.errors?.events
  const invalid = error ? html` aria-invalid="true" aria-describedby="field-events-error"` : ''
  return html`<fieldset class="field">
<legend>Events</legend>
<ul class="checks">!${ALL_EVENT_TYPES.map(
    (
      type,
    ) => html`<li><label class="check"><input type="checkbox" name="events" value="${type}"!${checked.has(type) ? ' checked' : ''}!${invalid}>
<span><code>${type}</code><span class="check-text">${EVENT_TYPES[type]}</span></span></label></li>`,
  )}</ul>
!${error ? html`<p class="field-error" id="field-events-error">${error}</p>` : ''}
</fieldset>`
}

export function webhooksPage(data: {
  nav: AppNav
  endpoints: WebhookEndpoint[]
  /** The endpoint just made, whose secret is shown this once. */
  created?: { endpoint: WebhookEndpoint; secret: string }
  form?: FormState
  notice?: string
}): Page {
  const { nav, endpoints, created } = data
  const form = data.form ?? {}
  const list =
    endpoints.length === 0
      ? html`<p class="muted">No webhook endpoints yet.</p>`
      : html`<ul class="items" aria-label="Your webhook endpoints">!${endpoints.map(endpointRow)}</ul>`
  const body = html`!${notice(data.notice)}
!${created ? secretBox(`The secret of ${created.endpoint.description ?? created.endpoint.url}`, created.secret) : ''}
<p class="muted">Coffer POSTs an event to each endpoint as it happens: a JSON body <code>{ type, timestamp, data }</code>, signed by the <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> scheme. Failed deliveries are tried again for three days.</p>
<h2>Your endpoints</h2>
!${list}
<h2 id="new-webhook-title">Add an endpoint</h2>
<form method="post" action="${WEBHOOK_PATHS.list}" novalidate aria-labelledby="new-webhook-title">
!${csrfInput(nav.csrfToken)}
!${formError(form)}
!${field(form, { name: 'url', label: 'URL', type: 'url', hint: 'An https:// address of your server that receives the events.', maxLength: 2048, placeholder: 'https://example.com/coffer-events' })}
!${field(form, { name: 'description', label: 'Description', hint: 'What it is for, such as "Zapier".', maxLength: DESCRIPTION_MAX_LENGTH, required: false })}
!${eventCheckboxes(form)}
<div class="actions"><button class="button primary" type="submit">Add endpoint</button></div>
</form>`
  return settingsPage(nav, 'webhooks', 'Webhooks', body)
}

/** An attempt's result as a person reads it: the status, or why none came. */
function attemptOutcome(attempt: Delivery['attempts'][number]): string {
  if (attempt.status !== null)
    return html`<span class="status-code">${String(attempt.status)}</span> in ${String(attempt.latencyMs)} ms`
  return html`<span>${attempt.error ?? 'No answer'}</span>`
}

const STATE_LABELS: Record<Delivery['state'], string> = {
  pending: 'Pending',
  succeeded: 'Delivered',
  failed: 'Failed',
}

function deliveryRow(endpointId: string, delivery: Delivery, csrfToken: string): string {
  const last = delivery.attempts.at(-1)
  const badgeClass =
    delivery.state === 'succeeded' ? 'badge-on' : delivery.state === 'failed' ? 'badge-warn' : ''
  return html`<li class="item">
<div class="item-main">
<p class="item-title"><code>${delivery.eventType}</code> <span class="badge !${badgeClass}">${STATE_LABELS[delivery.state]}</span></p>
<dl class="item-dates">
<div><dt>Event</dt><dd>!${when(delivery.createdAt, '')}</dd></div>
<div><dt>Attempts</dt><dd>${String(delivery.attempts.length)}</dd></div>
!${last ? html`<div><dt>Last</dt><dd>!${attemptOutcome(last)}</dd></div>` : ''}
!${delivery.nextAttemptAt !== null && delivery.attempts.length > 0 ? html`<div><dt>Next attempt</dt><dd>!${when(delivery.nextAttemptAt, '')}</dd></div>` : ''}
</dl>
!${
    delivery.attempts.length > 0
      ? html`<details class="attempts"><summary>Attempts of <code>${delivery.eventId}</code></summary><ol>!${delivery.attempts.map(
          (attempt) =>
            html`<li>!${when(attempt.at, '')}: !${attemptOutcome(attempt)}!${attempt.response ? html`<pre class="response">${attempt.response}</pre>` : ''}</li>`,
        )}</ol></details>`
      : ''
  }
</div>
<form method="post" action="${WEBHOOK_PATHS.retry(endpointId, delivery.id)}" class="inline-form">!${csrfInput(csrfToken)}<button class="button" type="submit" aria-label="Retry the ${delivery.eventType} delivery">Retry</button></form>
</li>`
}

export function webhookPage(data: {
  nav: AppNav
  endpoint: WebhookEndpoint
  deliveries: Delivery[]
  /** A secret just rotated in, shown this once. */
  secret?: string
  notice?: string
}): Page {
  const { nav, endpoint, deliveries } = data
  const token = nav.csrfToken
  const action = (name: Parameters<typeof WEBHOOK_PATHS.action>[1], label: string, kind = '') =>
    html`<form method="post" action="${WEBHOOK_PATHS.action(endpoint.id, name)}" class="inline-form">!${csrfInput(token)}<button class="button !${kind}" type="submit">${label}</button></form>`
  const state = endpoint.isActive
    ? endpoint.failingSince === null
      ? html`<p>Receiving events.</p>`
      : html`<p class="webhook-failing">Every delivery has failed since !${when(endpoint.failingSince, '')}. After three days of failures, Coffer disables the endpoint.</p>`
    : html`<p>Disabled: nothing is sent to it.!${endpoint.disabledReason ? html` ${endpoint.disabledReason} Enable it again once your receiver answers.` : ''}</p>`
  const list =
    deliveries.length === 0
      ? html`<p class="muted">No deliveries yet. Send a test event to see one.</p>`
      : html`<ul class="items" aria-label="Recent deliveries">!${deliveries.map((d) => deliveryRow(endpoint.id, d, token))}</ul>`
  const body = html`<p class="muted"><a href="${WEBHOOK_PATHS.list}">All endpoints</a></p>
!${notice(data.notice)}
!${data.secret ? secretBox('The new secret', data.secret) : ''}
<div class="webhook-summary">
<dl class="item-dates">
<div><dt>URL</dt><dd><code>${endpoint.url}</code></dd></div>
<div><dt>Added</dt><dd>!${when(endpoint.createdAt, '')}</dd></div>
</dl>
!${eventTags(endpoint)}
!${state}
</div>
<div class="actions">
!${endpoint.isActive ? action('ping', 'Send a test event') : ''}
!${endpoint.isActive ? action('disable', 'Disable') : action('enable', 'Enable', 'primary')}
!${action('rotate', 'Rotate the secret')}
<a class="button danger" href="${WEBHOOK_PATHS.action(endpoint.id, 'delete')}">Delete</a>
</div>
<h2>Recent deliveries</h2>
!${list}`
  return settingsPage(nav, 'webhooks', endpoint.description ?? 'Webhook endpoint', body)
}

/** Asks before deleting: the endpoint goes with its deliveries, and nothing more is sent to it. */
export function deleteWebhookPage(data: { nav: AppNav; endpoint: WebhookEndpoint }): Page {
  const { nav, endpoint } = data
  const body = html`<p>Nothing more will be sent to <code>${endpoint.url}</code>, and its deliveries are forgotten. To stop for a while instead, disable it.</p>
<form method="post" action="${WEBHOOK_PATHS.action(endpoint.id, 'delete')}">
!${csrfInput(nav.csrfToken)}
<div class="actions"><button class="button danger" type="submit">Delete the endpoint</button><a class="button" href="${WEBHOOK_PATHS.view(endpoint.id)}">Keep it</a></div>
</form>`
  return settingsPage(nav, 'webhooks', `Delete ${endpoint.description ?? 'this endpoint'}?`, body)
}
