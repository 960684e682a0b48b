import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';
import { amount, amountFromNano } from '../format';
import { type Series, sum, units } from '../spend';
import { ScrollTable } from './Table';

// Only the parts a stacked bar chart draws, so the bundle carries nothing else of Chart.js.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

/** Colours told apart by most colour-vision types (Paul Tol's "bright" set, plus two); "Other" is grey. */
const COLOURS = ['#4477AA', '#EE6677', '#228833', '#CCBB44', '#66CCEE', '#AA3377', '#E69F00', '#332288'];
const OTHER_COLOUR = '#8C939D';

function colourOf(series: Series, index: number): string {
  return series.name.startsWith('Other (') ? OTHER_COLOUR : COLOURS[index % COLOURS.length];
}

/** One sentence a screen reader says for the canvas: the period, the total and the largest parts. */
function summary(days: string[], series: Series[], groupName: string): string {
  const period = `Stacked bar chart of spend per UTC day by ${groupName}, ${days[0]} to ${days[days.length - 1]}.`;
  const perDay = days.map((_, index) => series.reduce((total, item) => total + item.nano[index], 0n));
  const total = sum(perDay);
  if (total === 0n) return `${period} No spend in this period.`;
  let peak = 0;
  perDay.forEach((value, index) => {
    if (value > perDay[peak]) peak = index;
  });
  const largest = series[0];
  return `${period} Total ${amountFromNano(total)}. Highest day ${days[peak]}: ${amountFromNano(perDay[peak])}. Largest ${groupName}: ${largest.name}, ${amountFromNano(sum(largest.nano))}.`;
}

export function SpendChart({ caption, days, series, groupName }: { caption: string; days: string[]; series: Series[]; groupName: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);

  useEffect(() => {
    if (!canvas.current) return;
    const reducedMotion = matchMedia('(prefers-reduced-motion: reduce)').matches;
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = '#3d4451';
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: {
        labels: days.map((day) => day.slice(5)),
        datasets: series.map((item, index) => ({
          label: item.name,
          data: item.nano.map(units),
          backgroundColor: colourOf(item, index),
          borderColor: '#ffffff',
          borderWidth: 1,
          stack: 'spend',
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reducedMotion ? false : { duration: 250 },
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { stacked: true, grid: { display: false }, ticks: { maxRotation: 0, autoSkipPadding: 8 } },
          y: { stacked: true, beginAtZero: true, ticks: { callback: (value) => amount(Number(value)) }, grid: { color: '#e3e6eb' } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { boxWidth: 12, boxHeight: 12 } },
          tooltip: {
            callbacks: {
              title: (items) => (items[0] ? (days[items[0].dataIndex] ?? '') : ''),
              label: (item) => `${item.dataset.label ?? ''}: ${amount(Number(item.raw))}`,
              footer: (items) => `Total: ${amount(items.reduce((total, item) => total + Number(item.raw), 0))}`,
            },
          },
        },
      },
    });
    return () => chart.destroy();
  }, [days, series]);

  if (series.length === 0) {
    return (
      <figure class="chart">
        <figcaption>{caption}</figcaption>
        <p class="empty">
          No spend recorded from {days[0]} to {days[days.length - 1]}.
        </p>
      </figure>
    );
  }

  const totals = days.map((_, index) => series.reduce((total, item) => total + item.nano[index], 0n));

  return (
    <figure class="chart">
      <figcaption>{caption}</figcaption>
      <div class="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={summary(days, series, groupName)} />
      </div>
      <details class="chart-table">
        <summary>Show the numbers as a table</summary>
        <ScrollTable label={`${caption}: table`}>
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              {series.map((item) => (
                <th scope="col" key={item.name}>
                  {item.name}
                </th>
              ))}
              <th scope="col">Total</th>
            </tr>
          </thead>
          <tbody>
            {days.map((day, index) => (
              <tr key={day}>
                <th scope="row">{day}</th>
                {series.map((item) => (
                  <td class="number" key={item.name}>
                    {amountFromNano(item.nano[index])}
                  </td>
                ))}
                <td class="number">{amountFromNano(totals[index])}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      </details>
    </figure>
  );
}
