// A chart of views and downloads per day, drawn on the server as SVG, with its numbers as a table: what the
// analytics page shows for the account or one share, and a file's page for its link.
//
// Bars, not lines: the counts are small whole numbers with many zero days, and a bar per day shows "none" as
// nothing and a one as a one, where a line would draw slopes between days that nothing happened on.
//
// The SVG has no viewBox: it is as wide as its container, and its bars and labels are placed in percentages
// of that width and pixels of a fixed height, so the text keeps its size from a phone to a desktop (a viewBox
// would shrink the labels with the chart). Its margins, where the axis labels sit, are its CSS padding
// (`.chart-svg` in styles.css, whose height must match PLOT_HEIGHT). Colours, fonts and the hover band are
// classes of styles.css: the pages' CSP allows no inline style. The chart is one image to assistive
// technology, named by a summary of the numbers; the table beside it is its accessible equivalent.
import { html } from 'ghtml'

/** One UTC day's counts; `date` is the epoch ms of its midnight, as the analytics service gives it. */
export interface DailyCounts {
  date: number
  views: number
  downloads: number
}

export interface DailyChartOptions {
  /** Every day of the period, in order (days without counts as zeros). */
  days: readonly DailyCounts[]
  /** What the counts are of, for the chart's name and the table's caption: "All shares", a file's name. */
  label: string
}

/** The height of the plot in pixels; `.chart-svg` in styles.css adds the margins to it. */
export const PLOT_HEIGHT = 192
/** Where the date labels sit, below the plot, in its bottom margin. */
const DATE_LABEL_Y = PLOT_HEIGHT + 20
/** The most gridline intervals: more would crowd the labels of a 192 px plot. */
const MAX_INTERVALS = 5

const NUMBER = new Intl.NumberFormat('en')
const SHORT_DAY = new Intl.DateTimeFormat('en', { month: 'short', day: 'numeric', timeZone: 'UTC' })
const FULL_DAY = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeZone: 'UTC' })
const WEEKDAY = new Intl.DateTimeFormat('en', { weekday: 'short', timeZone: 'UTC' })

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const plural = (n: number, one: string, many: string) => `${NUMBER.format(n)} ${n === 1 ? one : many}`
/** A percentage of the plot's width, as an SVG length. */
const pct = (value: number) => `${Number(value.toFixed(4))}%`

/**
 * The top of the scale and its step: whole numbers of 1, 2 or 5 × 10^k, at most MAX_INTERVALS intervals,
 * the top at or above the largest count. Below 4, the scale still goes to 4, so a single view is a quarter
 * of the height rather than all of it.
 */
export function scaleOf(largest: number): { top: number; step: number } {
  if (largest <= 4) return { top: 4, step: 1 }
  for (let magnitude = 1; ; magnitude *= 10) {
    for (const factor of [1, 2, 5]) {
      const step = factor * magnitude
      const intervals = Math.ceil(largest / step)
      if (intervals <= MAX_INTERVALS) return { top: intervals * step, step }
    }
  }
}

/**
 * The dates written under the axis, by day index: every day of a week, else a day a week (or every two or
 * three) counted back from the last, about six at most. Short enough to fit a phone: "Nov 5"; a week's
 * days are only their numbers after the first, with the month again where it changes ("Nov 29", "30",
 * "Dec 1").
 */
function dateLabels(days: readonly DailyCounts[]): Map<number, string> {
  const count = days.length
  const every = count <= 7 ? 1 : count <= 35 ? 7 : count <= 70 ? 14 : Math.ceil(count / 6 / 7) * 7
  const indexes: number[] = []
  for (let i = count - 1; i >= 0; i -= every) indexes.unshift(i)
  const labels = new Map<number, string>()
  let month = -1
  for (const i of indexes) {
    const date = new Date((days[i] as DailyCounts).date)
    const sameMonth = every === 1 && date.getUTCMonth() === month
    labels.set(i, sameMonth ? String(date.getUTCDate()) : SHORT_DAY.format(date))
    month = date.getUTCMonth()
  }
  return labels
}

/** Totals and the busiest day, for the chart's name. */
function summary(days: readonly DailyCounts[], label: string): string {
  const first = days[0]
  const last = days.at(-1)
  if (!first || !last) return `${label}: no days to show.`
  let views = 0
  let downloads = 0
  let busiest = first
  for (const day of days) {
    views += day.views
    downloads += day.downloads
    if (day.views > busiest.views) busiest = day
  }
  const period = `${FULL_DAY.format(first.date)} to ${FULL_DAY.format(last.date)}`
  const totals = `${plural(views, 'view', 'views')} and ${plural(downloads, 'download', 'downloads')} in all`
  const peak =
    busiest.views > 0
      ? `; the most views, ${NUMBER.format(busiest.views)}, on ${FULL_DAY.format(busiest.date)}`
      : ''
  return `${label}: views and downloads per day, ${period}. ${totals}${peak}.`
}

/** The SVG: gridlines with their values, a pair of bars per day (views, then downloads), dates below. */
function chartSvg(days: readonly DailyCounts[], label: string): string {
  const largest = days.reduce((most, day) => Math.max(most, day.views, day.downloads), 0)
  const { top, step } = scaleOf(largest)
  const y = (value: number) => PLOT_HEIGHT - (value / top) * PLOT_HEIGHT
  // A count above zero is at least 2 px tall, so that a 1 beside a 1,000 still shows.
  const height = (value: number) => Math.max((value / top) * PLOT_HEIGHT, 2)
  const slot = 100 / Math.max(days.length, 1)
  const bar = slot * 0.4

  const grid: string[] = []
  for (let value = 0; value <= top; value += step) {
    const at = y(value)
    grid.push(
      html`<line class="${value === 0 ? 'chart-baseline' : 'chart-grid'}" x1="0" x2="100%" y1="${at}" y2="${at}"/><text class="chart-value" x="-8" y="${at}" dy="0.32em" text-anchor="end">${NUMBER.format(value)}</text>`,
    )
  }
  const dates = dateLabels(days)
  const bars = days.map((day, i) => {
    const left = i * slot
    const views =
      day.views > 0
        ? html`<rect class="chart-views" x="${pct(left + slot * 0.08)}" y="${PLOT_HEIGHT - height(day.views)}" width="${pct(bar)}" height="${height(day.views)}"/>`
        : ''
    const downloads =
      day.downloads > 0
        ? html`<rect class="chart-downloads" x="${pct(left + slot * 0.52)}" y="${PLOT_HEIGHT - height(day.downloads)}" width="${pct(bar)}" height="${height(day.downloads)}"/>`
        : ''
    const text = dates.get(i)
    const date = text
      ? html`<text class="chart-date" x="${pct(left + slot / 2)}" y="${DATE_LABEL_Y}" text-anchor="middle">${text}</text>`
      : ''
    // The band behind a day, highlighted on hover, carries the day's numbers as a tooltip for a mouse.
    return html`<g class="chart-day"><title>${FULL_DAY.format(day.date)}: ${plural(day.views, 'view', 'views')}, ${plural(day.downloads, 'download', 'downloads')}</title><rect class="chart-band" x="${pct(left)}" y="0" width="${pct(slot)}" height="${PLOT_HEIGHT}"/>!${views}!${downloads}</g>!${date}`
  })
  // Many days to a narrow chart make hairline bars: an outline of their own colour thickens them a little.
  const dense = days.length > 45 ? ' chart-dense' : ''
  return html`<svg class="chart-svg!${dense}" role="img" aria-label="${summary(days, label)}" focusable="false" xmlns="http://www.w3.org/2000/svg">!${grid}!${bars}</svg>`
}

/** The numbers of the chart as a table, a row per day and their totals. */
export function dailyTable(options: DailyChartOptions): string {
  let views = 0
  let downloads = 0
  const rows = options.days.map((day) => {
    views += day.views
    downloads += day.downloads
    return html`<tr><th scope="row"><time datetime="${isoDay(day.date)}">${WEEKDAY.format(day.date)}, ${FULL_DAY.format(day.date)}</time></th><td>${NUMBER.format(day.views)}</td><td>${NUMBER.format(day.downloads)}</td></tr>`
  })
  const caption = `Views and downloads per day: ${options.label}`
  // A region of its own that takes the focus, so that a keyboard can scroll it (it scrolls past 24rem).
  return html`<div class="table-scroll" role="region" aria-label="${caption}" tabindex="0"><table class="data-table">
<caption>${caption}</caption>
<thead><tr><th scope="col">Date (UTC)</th><th scope="col">Views</th><th scope="col">Downloads</th></tr></thead>
<tbody>!${rows}</tbody>
<tfoot><tr><th scope="row">Total</th><td>${NUMBER.format(views)}</td><td>${NUMBER.format(downloads)}</td></tr></tfoot>
</table></div>`
}

/**
 * Views and downloads per day as a bar chart with its legend, and the same numbers as a table behind
 * "Show as a table". Dates are UTC days, as the API counts them.
 */
export function dailyChart(options: DailyChartOptions): string {
  return html`<figure class="chart">
<ul class="chart-legend"><li><span class="chart-key chart-views" aria-hidden="true"></span>Views</li><li><span class="chart-key chart-downloads" aria-hidden="true"></span>Downloads</li></ul>
<div class="chart-frame">!${chartSvg(options.days, options.label)}</div>
<details class="chart-table"><summary>Show as a table</summary>!${dailyTable(options)}</details>
</figure>`
}
