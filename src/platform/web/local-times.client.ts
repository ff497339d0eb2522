/// <reference lib="dom" />
// Times in pages are written in UTC by the server (web/format.ts) and shown here in the reader's own time zone
// and language: `<time datetime="…" data-local>` as a date and time, `data-local="date"` as the day only, and
// `data-local="until"` as the day something works until when it ends at a midnight, else its day and time
// (web/chosen-days.ts writes it so). Run by every page (page.client.ts), and again by a script on what it adds
// (the rows of new uploads).

export function showLocalTimes(root: ParentNode = document): void {
  for (const time of root.querySelectorAll<HTMLTimeElement>('time[data-local]')) {
    const date = new Date(time.dateTime)
    if (Number.isNaN(date.getTime())) continue
    const mode = time.dataset.local
    const endsADay =
      mode === 'until' && date.getHours() === 0 && date.getMinutes() === 0 && date.getSeconds() === 0
    time.textContent =
      mode === 'date'
        ? date.toLocaleDateString(undefined, { dateStyle: 'medium' })
        : endsADay
          ? new Date(date.getTime() - 1).toLocaleDateString(undefined, { dateStyle: 'medium' })
          : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
  }
}
