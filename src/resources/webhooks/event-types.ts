// The events an account's webhooks may receive: what each means, and what the `data` of its body holds (the API's
// own shapes, named by their schemas in the OpenAPI document, as they were when the change committed). The
// OpenAPI document, the capability index and the webhook pages list them from here. What each is recorded from
// is its resource's to say (`FileEvents`, `ShareEvents`, `RequestEvents`); wiring.ts turns that into this data.

const ref = (schema: string) => ({ $ref: `#/components/schemas/${schema}` })

/** Why a file request stopped accepting files. */
export const CLOSED_BECAUSE = ['disabled', 'maxFiles', 'deadline'] as const
export type ClosedBecause = (typeof CLOSED_BECAUSE)[number]

const object = (properties: Record<string, object>) => ({
  type: 'object',
  required: Object.keys(properties),
  additionalProperties: false,
  properties,
})

export const EVENTS = {
  'file.created': {
    about: 'A file was made: an upload completed, or a file request received it.',
    data: ref('File'),
  },
  'file.trashed': {
    about:
      'A file was deleted into the trash: gone from every endpoint of the API, restorable until `purgeAt`. The file as it was, with `deletedAt` and `purgeAt`.',
    data: ref('TrashedFile'),
  },
  'file.restored': {
    about: 'A file came back from the trash, with its share link as it was: the file as it is now.',
    data: ref('File'),
  },
  'file.deleted': {
    about:
      'A file was deleted for good, with its share link and bytes: emptied from the trash, purged after the trash’s retention, or deleted with the trash turned off (`TRASH_RETENTION_DAYS=0`). The file as it was.',
    data: ref('File'),
  },
  'share.created': {
    about: 'A share link was created for a file, or a disabled or expired one reactivated.',
    data: ref('ShareWithFile'),
  },
  'share.viewed': {
    about:
      "A share link's page was viewed, as its view count counts: the link with its counts including this view.",
    data: ref('ShareWithFile'),
  },
  'share.downloaded': {
    about:
      "A share link's file was downloaded, as its download count counts: the link with its counts including this download.",
    data: ref('ShareWithFile'),
  },
  'folder_share.created': {
    about: 'A folder link was created, or a disabled or expired one reactivated.',
    data: ref('FolderShare'),
  },
  'folder_share.viewed': {
    about:
      "A folder link's page was viewed, as its view count counts: the link with its counts including this view.",
    data: ref('FolderShare'),
  },
  'folder_share.downloaded': {
    about:
      "A file of a folder link, or the folder as one zip, was downloaded, as the link's download count counts: the link with its counts including this download.",
    data: ref('FolderShare'),
  },
  'submission.received': {
    about: 'A file request received a file: the request and the Submission.',
    data: object({ request: ref('FileRequestWithCount'), submission: ref('Submission') }),
  },
  'request.closed': {
    about:
      'A file request stopped accepting files: its owner disabled it, it received as many files as it allows, or its deadline passed.',
    data: object({
      request: ref('FileRequestWithCount'),
      reason: {
        enum: CLOSED_BECAUSE,
        description:
          "Its owner disabled it (`disabled`), it received as many files as it allows (`maxFiles`), or its deadline passed while it was open (`deadline`, recorded within seconds of it). The request's `state` then says `disabled`, `full` or `past_deadline`, and goes on saying what is true later.",
      },
    }),
  },
} as const satisfies Record<string, { about: string; data: object }>

export type EventType = keyof typeof EVENTS

export const ALL_EVENT_TYPES = Object.keys(EVENTS) as EventType[]

/** What each event type means. */
export const EVENT_TYPES = Object.fromEntries(
  ALL_EVENT_TYPES.map((type) => [type, EVENTS[type].about]),
) as Record<EventType, string>

/** The type of a test event (`POST /webhooks/{id}/ping`): sent to the one endpoint, whatever it subscribes to. */
export const PING_EVENT = 'webhook.ping'

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENTS, value)
}
