// The email that tells an owner one of their webhook endpoints was disabled, queued in the transaction that
// disables it (webhook-sender.job.ts), so it is sent once the change has committed, and for no other.
import type { MailMessage } from '../../platform/mail/mail.repository.ts'
import type { WebhookEndpoint } from './webhooks.repository.ts'

export function endpointDisabledMessage(
  to: string,
  endpoint: WebhookEndpoint,
  reason: string,
  endpointPage: string,
): MailMessage {
  const named = endpoint.description ? `${endpoint.url} (${endpoint.description})` : endpoint.url
  return {
    to,
    subject: 'A webhook endpoint of your Coffer account was disabled',
    text: [
      `Coffer stopped sending events to the webhook endpoint ${named}: it failed for three days.`,
      reason,
      '',
      'Events that happen while it is disabled are not sent to it. Once it answers again, enable it here (the',
      'failures are forgotten), and send a test event to check it:',
      endpointPage,
    ].join('\n'),
  }
}
