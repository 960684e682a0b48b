import { useEffect, useMemo } from 'preact/hooks';
import { dailyTotals, lineStates, minuteTotals } from '../api';
import { ListView } from '../components/ListView';
import { MinuteChart } from '../components/MinuteChart';
import { SpendChart } from '../components/SpendChart';
import { Busy, ErrorAlert, Loading } from '../components/Status';
import { ScrollTable } from '../components/Table';
import { addDays, amountFromNano, count, daysBetween, utcClock, utcDay } from '../format';
import { useLoad } from '../hooks';
import { fillMinutes, minuteLabel } from '../minutes';
import { seriesBy, totalsOf, type Totals } from '../spend';
import type { LineStateView } from '../types';

const CHART_DAYS = 30;
/** The calls-per-minute chart's window: the last 3 hours. */
const CHART_MINUTES = 180;
/** How often the calls per minute and the lines are read again while the page is open. */
const LIVE_REFRESH_MS = 15_000;

function Stat({ label, totals }: { label: string; totals: Totals }) {
  return (
    <div class="stat">
      <dt>{label}</dt>
      <dd>
        <span class="stat-value">{amountFromNano(totals.nano)}</span>
        <span class="stat-detail">
          {count(totals.calls)} {totals.calls === 1 ? 'call' : 'calls'}, {count(totals.failedCalls)} failed
        </span>
      </dd>
    </div>
  );
}

export function OverviewPage() {
  const today = utcDay(new Date());
  const monthStart = `${today.slice(0, 8)}01`;
  const chartStart = addDays(today, -(CHART_DAYS - 1));
  const from = monthStart < chartStart ? monthStart : chartStart;

  // One read grouped by owner serves every figure: summed by model, by owner, or for a period.
  const totals = useLoad(() => dailyTotals({ from, to: today, group_by: 'owner' }), [from, today]);

  const view = useMemo(() => {
    const rows = totals.data;
    if (!rows) return undefined;
    const days = daysBetween(chartStart, today);
    return {
      today: totalsOf(rows, (row) => row.day === today),
      month: totalsOf(rows, (row) => row.day >= monthStart),
      days,
      byModel: seriesBy(rows, days, (row) => row.model),
      byOwner: seriesBy(rows, days, (row) => row.owner ?? 'unknown'),
    };
  }, [totals.data, chartStart, today, monthStart]);

  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <Busy loading={totals.loading}>
        {totals.loading && !view && <Loading what="spend" />}
        <ErrorAlert error={totals.error} title="Spend could not be loaded." />
        {view && (
          <>
            <section aria-labelledby="spend-heading">
              <h2 id="spend-heading">Spend (UTC)</h2>
              <dl class="stats">
                <Stat label={`Today, ${today}`} totals={view.today} />
                <Stat label={`This month, since ${monthStart}`} totals={view.month} />
              </dl>
            </section>
            <section aria-labelledby="daily-heading">
              <h2 id="daily-heading">Last {CHART_DAYS} days</h2>
              <div class="charts">
                <SpendChart caption={`Spend per day by model, ${chartStart} to ${today} (UTC)`} days={view.days} series={view.byModel} groupName="model" />
                <SpendChart caption={`Spend per day by owner, ${chartStart} to ${today} (UTC)`} days={view.days} series={view.byOwner} groupName="owner" />
              </div>
            </section>
          </>
        )}
        <p>
          <button type="button" class="button-secondary" onClick={totals.reload} disabled={totals.loading}>
            Refresh
          </button>
        </p>
      </Busy>
      <LiveFigures />
    </>
  );
}

/** Calls per minute and the lines' state, read again every 15 seconds while the page is open. */
function LiveFigures() {
  const minutes = useLoad(async () => {
    const rows = await minuteTotals({ minutes: CHART_MINUTES });
    return fillMinutes(rows, CHART_MINUTES, Date.now());
  }, []);
  const lines = useLoad(async () => ({ lines: await lineStates(), at: new Date().toISOString() }), []);

  useEffect(() => {
    const timer = setInterval(() => {
      // A hidden tab asks nothing; it catches up at the next tick after it is shown again.
      if (document.hidden) return;
      minutes.reload();
      lines.reload();
    }, LIVE_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  const perMinute = minutes.data;
  const caption = perMinute
    ? `Calls and failed calls per minute, ${minuteLabel(perMinute[0].at)} to ${minuteLabel(perMinute[perMinute.length - 1].at)} (UTC)`
    : 'Calls and failed calls per minute';

  return (
    <>
      <section aria-labelledby="minutes-heading">
        <h2 id="minutes-heading">Last 3 hours</h2>
        <Busy loading={minutes.loading}>
          {minutes.loading && !perMinute && <Loading what="calls per minute" />}
          <ErrorAlert error={minutes.error} title="Calls per minute could not be loaded." />
          {perMinute && <MinuteChart caption={caption} minutes={perMinute} />}
        </Busy>
      </section>
      <section aria-labelledby="lines-heading">
        <h2 id="lines-heading">Lines</h2>
        <p class="hint">
          The figures of the replica that answered: each replica has its own connections and cooling. Read again every 15 seconds
          {lines.data && (
            <>
              ; last read at <time dateTime={lines.data.at}>{utcClock(lines.data.at)}</time>
            </>
          )}
          .
        </p>
        <ListView list={lines} rows={lines.data?.lines} what="lines" errorTitle="The lines could not be loaded." empty="The catalog has no lines.">
          {(rows) => <LineStates lines={rows} />}
        </ListView>
      </section>
    </>
  );
}

function LineStates({ lines }: { lines: LineStateView[] }) {
  return (
    <ScrollTable labelledBy="lines-heading">
      <thead>
        <tr>
          <th scope="col">Line</th>
          <th scope="col">Address</th>
          <th scope="col" class="number">
            In flight
          </th>
          <th scope="col">State</th>
        </tr>
      </thead>
      <tbody>
        {lines.map((line) => (
          <tr key={line.id}>
            <th scope="row">{line.id}</th>
            <td>
              <code>{line.base_url}</code>
            </td>
            <td class="number">
              {count(line.in_flight)}
              {line.max_concurrency === null ? <span class="muted"> (no limit)</span> : ` of ${count(line.max_concurrency)}`}
            </td>
            <td>
              {line.cooling ? (
                <span class="badge badge-warn">
                  Cooling until {line.cooling_until === null ? 'soon' : <time dateTime={line.cooling_until}>{utcClock(line.cooling_until)}</time>}
                </span>
              ) : line.rate_limited_until !== null ? (
                <span class="badge badge-warn">
                  Vendor asked to wait until <time dateTime={line.rate_limited_until}>{utcClock(line.rate_limited_until)}</time>
                </span>
              ) : (
                <span class="badge badge-ok">Ready</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}
