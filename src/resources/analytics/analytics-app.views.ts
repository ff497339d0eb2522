// The analytics page of the web app: the totals as cards, the views and downloads per day of the last 7, 30
// or 90 days (all shares or one) as a chart with its table (web/chart.ts), and the shares most viewed and
// downloaded in those days. Every value from a user (file names) goes through ghtml's escaping `${…}`;
// `!${…}` only inserts fragments made here or by web/.
import { html } from 'ghtml'
import { dailyChart } from '../../platform/web/chart.ts'
import { select } from '../../platform/web/forms.ts'
import type { AppNav, Page } from '../../platform/web/layout.ts'
import type { Web } from '../../platform/web/web.ts'
import { SHARE_STATE_TEXT } from '../files/share-panel.views.ts'
import type { LinkTargetName, ShareInPeriod } from './analytics.repository.ts'
import { type AnalyticsOverview, PAGE_CHOICES, PAGE_RANGES, type PageRange } from './analytics.service.ts'

export const ANALYTICS_PATH = '/analytics'
/** The picker's value for all shares: share ids start with `shr_`, so it is never one. */
export const ALL_SHARES = 'all'

const NUMBER = new Intl.NumberFormat('en')
const SHORT_DAY = new Intl.DateTimeFormat('en', { month: 'short', day: 'numeric', timeZone: 'UTC' })
const FULL_DAY = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeZone: 'UTC' })

const count = (n: number, one: string, many: string) => `${NUMBER.format(n)} ${n === 1 ? one : many}`
/** The owner's page of what a link opens: the file's page, or the folder's, where its Share panel is. */
const targetHref = (target: LinkTargetName) =>
  target.fileId !== null
    ? `/files/${encodeURIComponent(target.fileId)}`
    : `/folders/${encodeURIComponent(target.folderId ?? '')}`

/** What a link is shown as: its file's name, or its folder's, marked as a folder. */
const nameOf = (target: LinkTargetName) => (target.fileId !== null ? target.name : `${target.name} (folder)`)

/** The page's address for a range and a share (all shares when none). */
export function analyticsHref(range: PageRange, shareId?: string): string {
  const query = new URLSearchParams({ days: String(range) })
  if (shareId) query.set('share', shareId)
  return `${ANALYTICS_PATH}?${query}`
}

/** A card of the totals; `words` for a value in words rather than a number, set smaller to fit a phone. */
function statCard(label: string, value: string, note: string, words = false): string {
  return html`<li class="stat-card"><span class="stat-label">${label}</span><span class="stat-value${words ? ' is-words' : ''}">${value}</span><span class="stat-note">${note}</span></li>`
}

/** All time: the account's totals, or the chosen share's (as GET /analytics answers them). */
function totals(data: AnalyticsOverview): string {
  const { share, totals } = data
  const cards = share
    ? [
        statCard('Views', NUMBER.format(share.views), 'of this link’s page, all time'),
        statCard('Downloads', NUMBER.format(share.downloads), 'through this link, all time'),
        statCard(
          'Link',
          SHARE_STATE_TEXT[share.state].short,
          share.state === 'active' ? 'it opens for anyone who has it' : 'it does not open now',
          true,
        ),
      ]
    : [
        statCard('Views', NUMBER.format(totals.views), 'of your share pages, all time'),
        statCard('Downloads', NUMBER.format(totals.downloads), 'through your links, all time'),
        statCard(
          'Active links',
          NUMBER.format(totals.activeShares),
          `of ${count(totals.shares, 'link', 'links')}`,
        ),
      ]
  const heading = share ? html`All time: ${share.name}` : 'All time'
  return html`<section class="analytics-totals" aria-labelledby="totals-title">
<h2 id="totals-title" class="analytics-subtitle">!${heading}</h2>
<ul class="stat-cards">!${cards}</ul>
!${share ? html`<p class="analytics-file-link"><a href="${targetHref(share)}">Open the ${share.fileId !== null ? 'file' : 'folder'}’s page<span class="sr-only">: ${share.name}</span></a> to change the link or share it again.</p>` : ''}
</section>`
}

/** The ranges as links, the current one marked; and the share picker, a GET form. */
function controls(data: AnalyticsOverview): string {
  const shareId = data.share?.shareId
  const ranges = PAGE_RANGES.map(
    (range) =>
      html`<li class="range-item"><a href="${analyticsHref(range, shareId)}"!${range === data.range ? ' aria-current="true"' : ''}>${range} days</a></li>`,
  )
  const choices = [
    { value: ALL_SHARES, label: 'All shares' },
    ...data.choices.map((choice) => ({
      value: choice.shareId,
      label:
        choice.state === 'active'
          ? nameOf(choice)
          : `${nameOf(choice)} (${SHARE_STATE_TEXT[choice.state].short.toLowerCase()})`,
    })),
  ]
  const hint = data.moreChoices
    ? `The ${NUMBER.format(PAGE_CHOICES)} newest links are listed; open a file’s page for the others.`
    : undefined
  return html`<div class="analytics-controls">
<nav class="range-nav" aria-label="Period"><ul>!${ranges}</ul></nav>
<form class="share-picker" method="get" action="${ANALYTICS_PATH}">
<input type="hidden" name="days" value="${String(data.range)}">
!${select(undefined, { name: 'share', label: 'Share link', choices, selected: shareId ?? ALL_SHARES, hint })}
<button class="button small picker-button" type="submit">Show</button>
</form>
</div>`
}

function topList(
  id: string,
  title: string,
  shares: ShareInPeriod[],
  measure: 'views' | 'downloads',
  period: string,
): string {
  const unit = measure === 'views' ? (['view', 'views'] as const) : (['download', 'downloads'] as const)
  const body =
    shares.length === 0
      ? html`<p class="muted">No ${unit[1]} in ${period}.</p>`
      : html`<ol class="top-list">!${shares.map(
          (share) =>
            html`<li class="top-item"><a class="top-name" href="${targetHref(share)}">${nameOf(share)}</a><span class="top-count">${count(share[measure], unit[0], unit[1])}</span></li>`,
        )}</ol>`
  return html`<section class="card top-card" aria-labelledby="${id}"><div class="card-body">
<h2 id="${id}">${title}</h2>
<p class="muted top-period">All shares, ${period}</p>
!${body}
</div></section>`
}

function emptyState(): string {
  return html`<section class="card analytics-empty" aria-labelledby="empty-title"><div class="card-body">
<h2 id="empty-title">No share links yet</h2>
<p>Share a file from its page to see views here. Each time someone opens the link’s page or downloads the file,
it counts, day by day.</p>
<p><a class="button primary" href="/">Go to your files</a></p>
</div></section>`
}

export function analyticsPage(data: AnalyticsOverview & { nav: AppNav }): Page {
  const title = data.share ? `Analytics: ${nameOf(data.share)}` : 'Analytics'
  const intro = html`<div class="analytics-intro">
<h1>Analytics</h1>
<p class="muted analytics-lead">Views of your share links’ pages and downloads through them. Days are in UTC.</p>
</div>`
  if (data.totals.shares === 0) {
    return {
      title: `${title} · Coffer`,
      nav: data.nav,
      main: html`<div class="analytics">!${intro}!${emptyState()}</div>`,
    }
  }
  const { series } = data
  let views = 0
  let downloads = 0
  for (const day of series.days) {
    views += day.views
    downloads += day.downloads
  }
  const period = `the last ${data.range} days`
  const span = `${SHORT_DAY.format(series.from)} to ${FULL_DAY.format(series.to)}`
  const label = data.share ? nameOf(data.share) : 'All shares'
  const main = html`<div class="analytics">
!${intro}
!${totals(data)}
<section class="card" aria-labelledby="per-day-title"><div class="card-body analytics-per-day">
<div class="analytics-head">
<h2 id="per-day-title">Per day, ${period}</h2>
<p class="muted analytics-span">${label} · ${span} · ${count(views, 'view', 'views')}, ${count(downloads, 'download', 'downloads')}</p>
</div>
!${controls(data)}
!${dailyChart({ days: series.days, label })}
</div></section>
<div class="top-lists">
!${topList('most-viewed-title', 'Most viewed', data.top.mostViewed, 'views', period)}
!${topList('most-downloaded-title', 'Most downloaded', data.top.mostDownloaded, 'downloads', period)}
</div>
</div>`
  return { title: `${title} · Coffer`, nav: data.nav, main }
}

/** A share that is not the account's (or no longer exists): said as any missing page is, with the way back. */
export function shareNotFoundPage(nav: AppNav, web: Pick<Web, 'notice'>): Page {
  const title = 'Nothing here'
  return {
    title: `${title} · Coffer`,
    nav,
    main: web.notice({
      title,
      message: 'This share link is not one of yours, or it has been deleted.',
      status: 404,
      extra: html`<p><a class="button" href="${ANALYTICS_PATH}">See all shares</a></p>`,
    }),
  }
}
