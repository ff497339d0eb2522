// The one check every name a client gives goes through (a file's, at upload and rename; a folder's): it must
// hold something but white space. JavaScript's trim() knows every Unicode space (U+3000 too) and line break.
import { invalid } from './errors.ts'

/** `name`, unless it is blank once trimmed: then a 400 naming `field`. */
export function nonBlankName(name: string, field: string): string {
  if (name.trim().length === 0) {
    throw invalid(
      `The request body "${field}" must not be blank.`,
      'Give a name with at least one visible character.',
      field,
    )
  }
  return name
}
