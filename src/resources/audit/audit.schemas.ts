// The audit log's entry as the API answers it (GET /api/v1/audit) and the admin's export writes it.
import { Type } from 'typebox'
import { ALL_AUDIT_KINDS, AUDIT_KIND_FAMILIES, AUDIT_KINDS } from '../../platform/audit/audit-kinds.ts'
import { DateTime, Nullable, toIso } from '../../platform/http/schemas.ts'
import type { AuditEntry } from './audit.service.ts'

const kindList = ALL_AUDIT_KINDS.map((kind) => `- \`${kind}\`: ${AUDIT_KINDS[kind].about}`).join('\n')

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String(),
    at: DateTime('When it happened.'),
    // A string, not an enum: an entry is kept for a year, longer than a kind may be recorded (a kind no longer
    // recorded must not make the log unreadable); the kinds recorded now are listed.
    kind: Type.String({ description: `What happened:\n${kindList}` }),
    actor: Type.Object(
      {
        type: Type.String({
          description:
            'Who did it: the account in the web app (`account`), one of its API keys (`key`), an application it allowed (`oauth_client`), an admin (`admin`), the admin command on the server (`admin_command`), someone without an account (`visitor`: a sign-in attempt, a submitter), or the service itself (`system`: a deadline, the trash’s purge).',
        }),
        id: Nullable(Type.String({ description: 'The account, key or application’s ID.' })),
        name: Nullable(
          Type.String({ description: 'The account’s email, the key’s or the application’s name.' }),
        ),
      },
      { additionalProperties: false },
    ),
    address: Nullable(
      Type.String({ description: 'The client’s IP address; null for what the server did on its own.' }),
    ),
    subjectId: Nullable(
      Type.String({ description: 'What it was done to: a file, link, key, request… by ID.' }),
    ),
    details: Type.Record(
      Type.String(),
      Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null(), Type.Array(Type.String())]),
      { description: 'What the change was (names, scopes, settings, a reason). Never a secret.' },
    ),
  },
  {
    $id: 'AuditEntry',
    additionalProperties: false,
    description: 'An entry of the account’s audit log, recorded in the same transaction as the change.',
  },
)

/** The `kind` filter: a kind, or a family of kinds (`share` for every `share.*`). */
export const AUDIT_KIND_FILTERS = [...AUDIT_KIND_FAMILIES, ...ALL_AUDIT_KINDS]

/** The `kind` of a page's query, when it is one the log knows; a page shows everything for anything else. */
export const knownKind = (kind: string | undefined) =>
  kind && (AUDIT_KIND_FILTERS as readonly string[]).includes(kind) ? kind : undefined

export const serializeAuditEntry = (entry: AuditEntry) => ({
  id: entry.id,
  at: toIso(entry.at),
  kind: entry.kind,
  actor: entry.actor,
  address: entry.address,
  subjectId: entry.subjectId,
  details: entry.details,
})
