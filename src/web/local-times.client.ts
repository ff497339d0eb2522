/// <reference lib="dom" />
// Times in pages are written in UTC by the server (web/format.ts) and shown here in the reader's own time zone
// and language: `<time datetime="…" data-local>` as a date and time, `data-local="date"` as the day only. Run by
// every page (page.client.ts), and again by a script on what it adds (the rows of new uploads).

export function showLocalTimes(root: ParentNode = document): void {
  for (const time of root.querySelectorAll<HTMLTimeElement>('time[data-local]')) {
    const date = new Date(time.dateTime)
    if (Number.isNaN(date.getTime())) continue
    time.textContent =
      time.dataset.local === 'date'
        ? date.toLocaleDateString(undefined, { dateStyle: 'medium' })
        : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
  }
}
