// What a file request's public page shows: its title and description, what it accepts, and the form a
// submitter fills in: name, email (when the request collects it), message, and files, chosen or dropped,
// each with its own progress once sent. The form's behaviour is request-page.client.ts; without scripts the
// page says that sending files needs them. Every text from a user (title, description) goes through ghtml's
// escaping `${…}`; `!${…}` only inserts fragments made here.
import { html } from 'ghtml'
import { MULTIPART_THRESHOLD_BYTES } from '../../platform/blob/blob-store.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { untilWhen } from '../../platform/web/chosen-days.ts'
import type { Page } from '../../platform/web/layout.ts'
import type { RequestState } from './request-state.ts'
import type { PublicFileRequest } from './requests.repository.ts'
import {
  describeAllowedTypes,
  MAX_FILES_PER_PREPARATION,
  SUBMISSION_LIMITS,
} from './submission-rules.shared.ts'

/** What the page's module needs to know, beyond the form itself. */
export interface RequestPageSettings {
  /** The path the server is at under its origin ('' at the root): the SDK's address is the page's origin and it. */
  serverPath: string
  /** The blob API the @vercel/blob client sends bytes to (VERCEL_BLOB_API_URL). */
  blobApiUrl: string
  /** The largest file accepted: the request's own limit within the server's. */
  maxFileSize: number
  /** The reader's time zone, the deadline's (web/chosen-days.ts). */
  timeZone: string
}

const UPLOAD_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 16V5m0 0-4.5 4.5M12 5l4.5 4.5M5 19h14" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`
const INBOX_ICON = html`<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4 13.5 6.2 5.8A2 2 0 0 1 8.1 4.4h7.8a2 2 0 0 1 1.9 1.4L20 13.5V18a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2v-4.5Z" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/><path d="M4 13.5h4.5l1.2 2h4.6l1.2-2H20" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linejoin="round"/></svg>`

/** The request's limits in words, for the list under its title. */
function limitItems(request: PublicFileRequest, settings: RequestPageSettings): string[] {
  const { limits } = request
  const items = [html`<li>Files of up to ${formatSize(settings.maxFileSize)} each</li>`]
  if (limits.allowedTypes.length > 0) {
    items.push(html`<li>Accepted: ${describeAllowedTypes(limits.allowedTypes)}</li>`)
  }
  if (limits.maxFiles !== null) {
    items.push(html`<li>At most ${limits.maxFiles} file${limits.maxFiles === 1 ? '' : 's'} in all</li>`)
  }
  if (limits.deadlineAt !== null) {
    items.push(html`<li>Open until !${untilWhen(limits.deadlineAt, settings.timeZone)}</li>`)
  }
  return items
}

/** A text field with its label, hint and the place its error is shown. */
function field(options: {
  id: string
  name: string
  label: string
  type: 'text' | 'email'
  max: number
  required: boolean
  autocomplete: string
}): string {
  const { id, name, label, type, max, required, autocomplete } = options
  return html`<div class="field">
<label for="${id}">${label}!${required ? '' : html` <span class="optional">(optional)</span>`}</label>
<input id="${id}" name="${name}" type="${type}" maxlength="${max}" autocomplete="${autocomplete}"!${
    required ? html` required aria-required="true"` : ''
  } aria-describedby="${id}-error">
<p class="field-error" id="${id}-error" data-error-for="${name}" hidden></p>
</div>`
}

/** The page of a request that accepts files. */
export function requestPage(request: PublicFileRequest, settings: RequestPageSettings): Page {
  const { limits } = request
  const accept = limits.allowedTypes.join(',')
  const main = html`<article class="card request" aria-labelledby="request-title"><div class="card-body">
<p class="eyebrow">!${INBOX_ICON}File request</p>
<h1 id="request-title">${request.title}</h1>
!${request.description ? html`<p class="description">${request.description}</p>` : ''}
<ul class="meta" aria-label="What this request accepts">!${limitItems(request, settings)}</ul>
<noscript><p class="inline-notice">Sending files from this page needs JavaScript. Turn it on, or use another browser.</p></noscript>
<form class="submission" novalidate data-submission
 data-server="${settings.serverPath}"
 data-public-id="${request.publicId}"
 data-blob-api="${settings.blobApiUrl}"
 data-max-file-size="${settings.maxFileSize}"
 data-max-files="${limits.maxFiles ?? ''}"
 data-allowed-types="${JSON.stringify(limits.allowedTypes)}"
 data-collect-email="${request.collectEmail}"
 data-email-required="${request.emailRequired}"
 data-multipart-threshold="${MULTIPART_THRESHOLD_BYTES}"
 data-per-preparation="${MAX_FILES_PER_PREPARATION}">
!${field({ id: 'submitter-name', name: 'submitterName', label: 'Your name', type: 'text', max: SUBMISSION_LIMITS.name, required: false, autocomplete: 'name' })}
!${
    request.collectEmail
      ? field({
          id: 'submitter-email',
          name: 'submitterEmail',
          label: 'Your email',
          type: 'email',
          max: SUBMISSION_LIMITS.email,
          required: request.emailRequired,
          autocomplete: 'email',
        })
      : ''
  }
<div class="field">
<label for="message">Message <span class="optional">(optional)</span></label>
<textarea id="message" name="message" rows="3" maxlength="${SUBMISSION_LIMITS.message}" aria-describedby="message-error"></textarea>
<p class="field-error" id="message-error" data-error-for="message" hidden></p>
</div>
<fieldset class="field files">
<legend>Files</legend>
<div class="dropzone" data-dropzone>
!${UPLOAD_ICON}
<p class="dropzone-text"><span class="drop-hint">Drop files here, or </span><label class="button" for="files">Choose files</label></p>
<input id="files" class="sr-only" type="file" multiple!${accept ? html` accept="${accept}"` : ''} aria-describedby="files-error">
</div>
<p class="field-error" id="files-error" data-error-for="files" hidden></p>
<ul class="file-list" aria-label="Files to send" data-file-list></ul>
</fieldset>
<p class="form-error" role="alert" data-form-error hidden></p>
<div class="actions"><button class="button primary" type="submit" data-send disabled>Send files</button></div>
<p class="sr-only" role="status" data-announce></p>
</form>
<section class="summary" data-summary tabindex="-1" aria-labelledby="summary-title" hidden>
<h2 id="summary-title" data-summary-title></h2>
<p class="muted" data-summary-text></p>
<ul class="summary-list" data-summary-list></ul>
<div class="actions"><button class="button" type="button" data-send-more>Send more files</button></div>
</section>
</div></article>`
  return {
    title: `${request.title} · Coffer`,
    description: `A file request: send files to ${request.title}`,
    main,
    scripts: ['request-page.js'],
  }
}

/** What a request that takes no more files shows: that, and why, and nothing of the request. */
export function closedText(state: Exclude<RequestState, 'open'>) {
  const why = {
    disabled: 'Its owner closed it.',
    past_deadline: 'Its deadline has passed.',
    full: 'It has received every file it asked for.',
  }[state]
  return {
    title: 'This request no longer accepts files',
    message: `${why} Ask the person who sent the link whether they still want files.`,
  }
}
