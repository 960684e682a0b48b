import { CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';
import { amountFromNano, count } from '../format';
import { type MinuteRow, minuteLabel } from '../minutes';
import { ScrollTable } from './Table';

// A line chart needs these parts besides the scales and plugins the spend charts register.
Chart.register(LineController, LineElement, PointElement, CategoryScale, LinearScale, Legend, Tooltip);

const CALLS_COLOUR = '#4477AA';
const FAILED_COLOUR = '#CC3311';

/** One sentence a screen reader says for the canvas: the period, the totals and the busiest minute. */
function summary(minutes: MinuteRow[]): string {
  const first = minuteLabel(minutes[0].at);
  const last = minuteLabel(minutes[minutes.length - 1].at);
  const period = `Line chart of calls and failed calls per minute, ${first} to ${last} UTC.`;
  const calls = minutes.reduce((total, minute) => total + minute.calls, 0);
  const failed = minutes.reduce((total, minute) => total + minute.failedCalls, 0);
  if (calls === 0) return `${period} No calls in this period.`;
  const busiest = minutes.reduce((best, minute) => (minute.calls > best.calls ? minute : best));
  let text = `${period} ${count(calls)} ${calls === 1 ? 'call' : 'calls'}, ${count(failed)} failed. Busiest minute ${minuteLabel(busiest.at)}: ${count(busiest.calls)} calls.`;
  if (failed > 0) {
    const worst = minutes.reduce((best, minute) => (minute.failedCalls > best.failedCalls ? minute : best));
    text += ` Most failed calls at ${minuteLabel(worst.at)}: ${count(worst.failedCalls)}.`;
  }
  return text;
}

function datasetsOf(minutes: MinuteRow[]) {
  return {
    labels: minutes.map((minute) => minuteLabel(minute.at)),
    calls: minutes.map((minute) => minute.calls),
    failed: minutes.map((minute) => minute.failedCalls),
  };
}

/**
 * Calls and failed calls per minute. The chart is made once and its data replaced at each
 * refresh, so a refresh every few seconds neither flickers nor animates.
 */
export function MinuteChart({ caption, minutes }: { caption: string; minutes: MinuteRow[] }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<'line'> | null>(null);
  const hasCalls = minutes.some((minute) => minute.calls > 0);

  useEffect(() => {
    if (!canvas.current) return;
    const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)').matches;
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = '#3d4451';
    const data = datasetsOf(minutes);
    const created = new Chart(canvas.current, {
      type: 'line',
      data: {
        labels: data.labels,
        datasets: [
          { label: 'Calls', data: data.calls, borderColor: CALLS_COLOUR, backgroundColor: CALLS_COLOUR, borderWidth: 2, pointRadius: 0, pointHitRadius: 4 },
          {
            label: 'Failed calls',
            data: data.failed,
            borderColor: FAILED_COLOUR,
            backgroundColor: FAILED_COLOUR,
            borderWidth: 2,
            // Dashed as well as red, so the two lines differ without colour.
            borderDash: [6, 3],
            pointRadius: 0,
            pointHitRadius: 4,
          },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reducedMotion ? false : { duration: 250 },
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { grid: { display: false }, ticks: { maxRotation: 0, autoSkipPadding: 12 } },
          y: { beginAtZero: true, ticks: { precision: 0, callback: (value) => count(Number(value)) }, grid: { color: '#e3e6eb' } },
        },
        plugins: {
          // Legend keys drawn as lines, dashed like the line they name.
          legend: { position: 'bottom', labels: { usePointStyle: true, pointStyle: 'line', pointStyleWidth: 28, boxHeight: 12 } },
          tooltip: {
            callbacks: {
              title: (items) => (items[0] ? `${items[0].label} UTC` : ''),
              label: (item) => `${item.dataset.label ?? ''}: ${count(Number(item.raw))}`,
            },
          },
        },
      },
    });
    chart.current = created;
    return () => {
      created.destroy();
      chart.current = null;
    };
  }, [hasCalls]);

  useEffect(() => {
    const current = chart.current;
    if (!current) return;
    const data = datasetsOf(minutes);
    current.data.labels = data.labels;
    current.data.datasets[0].data = data.calls;
    current.data.datasets[1].data = data.failed;
    current.update('none');
  }, [minutes]);

  const first = minuteLabel(minutes[0].at);
  const last = minuteLabel(minutes[minutes.length - 1].at);

  if (!hasCalls) {
    return (
      <figure class="chart">
        <figcaption>{caption}</figcaption>
        <p class="empty">
          No calls from {first} to {last} UTC.
        </p>
      </figure>
    );
  }

  const withCalls = minutes.filter((minute) => minute.calls > 0);

  return (
    <figure class="chart">
      <figcaption>{caption}</figcaption>
      <div class="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={summary(minutes)} />
      </div>
      <details class="chart-table">
        <summary>Show the numbers as a table</summary>
        <ScrollTable label={`${caption}: table`}>
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Minute (UTC)</th>
              <th scope="col" class="number">
                Calls
              </th>
              <th scope="col" class="number">
                Failed calls
              </th>
              <th scope="col" class="number">
                Cost
              </th>
            </tr>
          </thead>
          <tbody>
            {withCalls.map((minute) => (
              <tr key={minute.at}>
                <th scope="row">
                  <time dateTime={new Date(minute.at).toISOString()}>{minuteLabel(minute.at)}</time>
                </th>
                <td class="number">{count(minute.calls)}</td>
                <td class="number">{count(minute.failedCalls)}</td>
                <td class="number">{amountFromNano(minute.costNano)}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
        <p class="hint">Minutes without calls are left out of the table.</p>
      </details>
    </figure>
  );
}
