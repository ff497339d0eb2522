/// <reference lib="dom" />
// What every page does in the browser, and nothing it needs to work: pages are complete without it.
// - `<button data-copy="…" hidden>` copies its value to the clipboard and says so in `[data-copy-status]`
//   (a live region; `data-copy-done` gives the words), then is shown: without this module there is nothing
//   for it to do.
// - `<time datetime="…" data-local>` is shown in the reader's own time zone and language instead of UTC
//   (`data-local="date"`: the day only; local-times.client.ts).
// - The browser's time zone is kept in a cookie, for the days pages show and forms read (chosen-days.ts).
// - `[data-reveal]` buttons swap in the content of the `<template>` they name (a PDF viewer, say), so a page
//   loads it only when asked.
// - `<details data-menu>` (the account menu) closes on Escape, giving the focus back to its summary, and on a
//   click elsewhere.
// - A form shown again with problems: the focus goes to the first field at fault (or the form's error), so a
//   keyboard or screen reader user lands where there is something to fix.
import { showLocalTimes } from './local-times.client.ts'

// The browser's time zone, for the days the server shows and reads on forms (chosen-days.ts): a cookie, set when
// it is missing or the zone changed (a laptop that travelled).
const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone
if (timeZone && !document.cookie.split('; ').includes(`coffer_tz=${encodeURIComponent(timeZone)}`)) {
  const secure = location.protocol === 'https:' ? '; Secure' : ''
  // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is not in every browser yet; the value is one encoded zone name.
  document.cookie = `coffer_tz=${encodeURIComponent(timeZone)}; Path=/; Max-Age=31536000; SameSite=Lax${secure}`
}

for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
  const status = document.querySelector<HTMLElement>('[data-copy-status]')
  button.hidden = !navigator.clipboard
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(button.dataset.copy ?? '')
      if (status) status.textContent = button.dataset.copyDone ?? 'Link copied to the clipboard.'
    } catch {
      if (status) status.textContent = 'Could not copy; select the address bar and copy it from there.'
    }
  })
}

showLocalTimes()

for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-reveal]')) {
  const template = document.getElementById(button.dataset.reveal ?? '')
  if (!(template instanceof HTMLTemplateElement)) continue
  button.hidden = false
  button.addEventListener('click', () => {
    const container = button.closest('[data-reveal-container]') ?? button.parentElement
    container?.replaceChildren(template.content.cloneNode(true))
  })
}

for (const menu of document.querySelectorAll<HTMLDetailsElement>('details[data-menu]')) {
  menu.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || !menu.open) return
    menu.open = false
    menu.querySelector('summary')?.focus()
  })
  document.addEventListener('click', (event) => {
    if (menu.open && !menu.contains(event.target as Node)) menu.open = false
  })
}

const firstProblem =
  document.querySelector<HTMLElement>('main [aria-invalid="true"]') ??
  document.querySelector<HTMLElement>('main #form-error')
if (firstProblem) {
  if (firstProblem.id === 'form-error') firstProblem.tabIndex = -1
  firstProblem.focus()
}
