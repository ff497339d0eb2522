// The events an account's webhooks may receive, with what each means; the OpenAPI document and the capability
// index list them from here.
export const EVENT_TYPES = {
  'file.created': 'A file was made: an upload completed, or a file request received it.',
  'file.deleted': 'A file was deleted (with its share link).',
  'share.created': 'A share link was created for a file, or a disabled or expired one reactivated.',
  'share.viewed':
    "A share link's page was viewed, as its view count counts: the link with its counts including this view.",
  'share.downloaded':
    "A share link's file was downloaded, as its download count counts: the link with its counts including this download.",
  'submission.received': 'A file request received a file: the request and the Submission.',
  'request.closed':
    'A file request stopped accepting files: its owner disabled it, it received as many files as it allows, or its deadline passed.',
} as const

export type EventType = keyof typeof EVENT_TYPES

export const ALL_EVENT_TYPES = Object.keys(EVENT_TYPES) as EventType[]

/** The type of a test event (`POST /webhooks/{id}/ping`): sent to the one endpoint, whatever it subscribes to. */
export const PING_EVENT = 'webhook.ping'

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_TYPES, value)
}
