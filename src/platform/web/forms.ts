// The pieces of every page's forms: a field with its label, hint and error; the CSRF input; the error of a
// form as a whole. A refused form is shown again with what was typed (never a password) and each problem
// beside its field, marked `aria-invalid` and named by `aria-describedby`; page.client.ts moves the focus to
// the first problem. Every value goes through ghtml's escaping `${…}`.
import formBody from '@fastify/formbody'
import type { FastifyInstance } from 'fastify'
import { html } from 'ghtml'
import { AppError } from '../errors.ts'
import { parseFormStrictly } from '../http/strict-text.ts'

/**
 * Lets the routes of the calling plugin take form bodies, parsed as strictly as the API's JSON
 * (parseFormStrictly). Registered per plugin, so that the API's routes still refuse form bodies (415).
 */
export async function acceptForms(app: FastifyInstance, bodyLimit = 16 * 1024): Promise<void> {
  await app.register(formBody, { bodyLimit, parser: parseFormStrictly })
}

/** A form's state when it is shown again: the values typed and what was wrong with them. */
export interface FormState {
  values?: Readonly<Record<string, string | undefined>>
  /** Field name → message; `form` for a problem of the whole form. */
  errors?: Readonly<Record<string, string | undefined>>
}

/** A service's refusal as a form shows it again: its status, and its message beside the field it is about. */
export interface Refusal {
  status: number
  errors: Record<string, string>
}

export interface RefusalOptions {
  /** Beside this field, whatever the service named. */
  field?: string
  /** The form's names of the service's fields (`expiresAt` → `expires`). */
  fields?: Readonly<Record<string, string>>
  /** A field the service names and `fields` does not: beside it as named (default), or on the form as a whole. */
  otherFields?: 'as-named' | 'form'
  /** The page's words for a refusal about a field, in place of the API's (which name its body's properties). */
  messages?: Readonly<Record<string, string>>
}

/**
 * What a form shows of an error thrown by the service it called: a refusal of the catalogue (an AppError below
 * 500) beside the field it names (`form`, the form as a whole, when it names none). Anything else is not the
 * form's to show and is thrown again for the error pages: a fault, and a not_found about no field (the page's
 * own subject is gone, or is another account's).
 */
export function refusalOf(error: unknown, options: RefusalOptions = {}): Refusal {
  if (!(error instanceof AppError) || error.status >= 500) throw error
  if (error.code === 'not_found' && error.field === undefined) throw error
  const named = error.field === undefined ? undefined : options.fields?.[error.field]
  const field =
    options.field ??
    named ??
    (error.field === undefined || options.otherFields === 'form' ? 'form' : error.field)
  const message = (error.field === undefined ? undefined : options.messages?.[error.field]) ?? error.message
  return { status: error.status, errors: { [field]: message } }
}

/** The hidden input that carries a form's CSRF token (@fastify/csrf-protection reads `_csrf`). */
export function csrfInput(token: string): string {
  return html`<input type="hidden" name="_csrf" value="${token}">`
}

/** The problem of the form as a whole, announced when the page opens. */
export function formError(state: FormState | undefined): string {
  const message = state?.errors?.form
  return message ? html`<p class="form-error" role="alert" id="form-error">${message}</p>` : ''
}

/** A notice that something worked ("Folder created."), announced politely. */
export function notice(message: string | undefined): string {
  return message ? html`<p class="inline-notice" role="status">${message}</p>` : ''
}

interface FieldOptions {
  name: string
  label: string
  /** Defaults to `field-<name>`; give one when a page has two forms with the same field. */
  id?: string
  hint?: string
  required?: boolean
}

export interface InputOptions extends FieldOptions {
  type?: 'text' | 'email' | 'password' | 'date' | 'datetime-local' | 'number' | 'url' | 'search'
  autocomplete?: string
  maxLength?: number
  min?: number | string
  max?: number | string
  step?: number | string
  placeholder?: string
  inputMode?: 'numeric' | 'text'
  /** Shown and sent, not changed: a value the page settled (the address an invitation was sent to). */
  readOnly?: boolean
}

/** The parts every field shares: its id, its error, and the attributes that tie them together. */
function parts(state: FormState | undefined, options: FieldOptions) {
  const id = options.id ?? `field-${options.name}`
  const error = state?.errors?.[options.name]
  const required = options.required ?? true
  const describedBy = [options.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ')
  return {
    id,
    required,
    label: html`<label for="${id}">${options.label}!${required ? '' : html` <span class="optional">(optional)</span>`}</label>`,
    hint: options.hint ? html`<p class="hint" id="${id}-hint">${options.hint}</p>` : '',
    error: error ? html`<p class="field-error" id="${id}-error">${error}</p>` : '',
    attributes: html`!${required ? ' required' : ''}!${describedBy ? html` aria-describedby="${describedBy}"` : ''}!${error ? ' aria-invalid="true"' : ''}`,
  }
}

const optional = (name: string, value: number | string | undefined) =>
  value === undefined ? '' : html` ${name}="${String(value)}"`

/** A one-line input with its label, hint and error. A password is never shown again. */
export function field(state: FormState | undefined, options: InputOptions): string {
  const type = options.type ?? 'text'
  const p = parts(state, options)
  const value = type === 'password' ? '' : (state?.values?.[options.name] ?? '')
  return html`<div class="field">
!${p.label}
!${p.hint}
<input id="${p.id}" name="${options.name}" type="${type}" value="${value}"!${optional('autocomplete', options.autocomplete ?? 'off')}!${optional('maxlength', options.maxLength)}!${optional('min', options.min)}!${optional('max', options.max)}!${optional('step', options.step)}!${optional('placeholder', options.placeholder)}!${optional('inputmode', options.inputMode)}!${options.readOnly ? ' readonly' : ''}!${p.attributes}>
!${p.error}
</div>`
}

/** A text area with its label, hint and error. */
export function textArea(
  state: FormState | undefined,
  options: FieldOptions & { rows?: number; maxLength?: number },
): string {
  const p = parts(state, options)
  return html`<div class="field">
!${p.label}
!${p.hint}
<textarea id="${p.id}" name="${options.name}" rows="${options.rows ?? 3}"!${optional('maxlength', options.maxLength)}!${p.attributes}>${state?.values?.[options.name] ?? ''}</textarea>
!${p.error}
</div>`
}

/** A choice of one value from a list; `selected` when nothing was typed yet. */
export function select(
  state: FormState | undefined,
  options: FieldOptions & { choices: readonly { value: string; label: string }[]; selected?: string },
): string {
  const p = parts(state, options)
  const current = state?.values?.[options.name] ?? options.selected ?? ''
  return html`<div class="field">
!${p.label}
!${p.hint}
<select id="${p.id}" name="${options.name}"!${p.attributes}>!${options.choices.map(
    (choice) =>
      html`<option value="${choice.value}"!${choice.value === current ? ' selected' : ''}>${choice.label}</option>`,
  )}</select>
!${p.error}
</div>`
}

/** One checkbox with its label and hint; checked when the value typed was "on" (or `checked` at first). */
export function checkbox(
  state: FormState | undefined,
  options: Omit<FieldOptions, 'required'> & { checked?: boolean },
): string {
  const id = options.id ?? `field-${options.name}`
  const value = state?.values?.[options.name]
  const checked = value === undefined ? options.checked === true : value === 'on'
  const error = state?.errors?.[options.name]
  const describedBy = [options.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ')
  return html`<div class="field check-field">
<label class="check"><input type="checkbox" id="${id}" name="${options.name}"!${checked ? ' checked' : ''}!${describedBy ? html` aria-describedby="${describedBy}"` : ''}!${error ? ' aria-invalid="true"' : ''}>
<span><span class="check-title">${options.label}</span>!${options.hint ? html`<span class="check-text" id="${id}-hint">${options.hint}</span>` : ''}</span></label>
!${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}
</div>`
}
