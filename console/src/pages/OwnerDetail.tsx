import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { dailyTotals, listAlerts, listAllKeys, renewProjectKeys, setOwnerLimits } from '../api';
import { BudgetBar, KeyBudgetSummary, periodText } from '../components/BudgetBar';
import { BudgetForm } from '../components/BudgetForm';
import { KeyState } from '../components/KeyState';
import { LimitsForm, LimitsSummary } from '../components/LimitsFields';
import { ListView } from '../components/ListView';
import { RenewForm } from '../components/RenewForm';
import { SpendChart } from '../components/SpendChart';
import { Busy, ErrorAlert, Loading, Notice } from '../components/Status';
import { ScrollTable } from '../components/Table';
import { Time } from '../components/Time';
import { addDays, amount, amountFromNano, count, daysBetween, modelsScope, utcDay } from '../format';
import { useLoad } from '../hooks';
import { href } from '../router';
import { seriesBy, totalsOf } from '../spend';
import type { AlertView, OwnerView } from '../types';

const SPEND_DAYS = 30;
const ALERTS_SHOWN = 10;

/** One owner: its figures, budget and its period, alerts, rate limits, keys and the spend of its last days. */
export function OwnerDetail({
  owner,
  onChanged,
  onLimitsChanged,
}: {
  owner: OwnerView;
  onChanged: (owner: OwnerView) => void;
  onLimitsChanged: (owner: OwnerView) => void;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  const headingId = `owner-${owner.id}-heading`;

  // Opening another owner takes the reader to it.
  useEffect(() => heading.current?.focus(), [owner.id]);

  return (
    <section class="panel detail" aria-labelledby={headingId}>
      <h2 id={headingId} ref={heading} tabIndex={-1}>
        Owner {owner.id}
      </h2>
      <dl class="fields">
        <div class="field">
          <dt>Kind</dt>
          <dd>{owner.kind}</dd>
        </div>
        <div class="field">
          <dt>Budget</dt>
          <dd>{owner.budget_nano === null ? 'Unlimited' : amountFromNano(owner.budget_nano)}</dd>
        </div>
        <div class="field">
          <dt>Budget period</dt>
          <dd>{periodText(owner, 'None: the budget is for good')}</dd>
        </div>
        <div class="field">
          <dt>Alerts</dt>
          <dd>{owner.alerts.length === 0 ? 'None' : `At ${owner.alerts.map((threshold) => `${threshold}%`).join(', ')} of the budget`}</dd>
        </div>
        <div class="field">
          <dt>Spent, all time</dt>
          <dd>{amountFromNano(owner.spent_nano)}</dd>
        </div>
        <div class="field">
          <dt>Reserved (running video tasks)</dt>
          <dd>{amountFromNano(owner.reserved_nano)}</dd>
        </div>
        <div class="field">
          <dt>Use of budget</dt>
          <dd>
            <BudgetBar owner={owner} />
          </dd>
        </div>
        <div class="field">
          <dt>Rate limits (all keys together)</dt>
          <dd>
            <LimitsSummary limits={owner.limits} />
          </dd>
        </div>
        <div class="field">
          <dt>Source</dt>
          <dd>{owner.source === 'config' ? 'Configuration file (its values return at every start)' : 'Admin API'}</dd>
        </div>
        <div class="field">
          <dt>Created</dt>
          <dd>
            <Time iso={owner.created_at} />
          </dd>
        </div>
      </dl>
      <h3>Change the budget, its period and alerts</h3>
      <BudgetForm key={owner.id} owner={owner} onSaved={onChanged} />
      <OwnerAlerts owner={owner} />
      <h3>Change the rate limits</h3>
      <LimitsForm
        key={owner.id}
        label={`Rate limits of ${owner.id}`}
        legend={`New rate limits of ${owner.id}`}
        hint={`Shared by all keys of ${owner.id} together; each key may have tighter limits of its own. A call over a limit is answered 429.`}
        limits={owner.limits}
        source={owner.source}
        save={async (limits) => {
          const saved = await setOwnerLimits(owner.id, limits);
          onLimitsChanged(saved);
          return saved;
        }}
      />
      <OwnerKeys owner={owner} />
      <OwnerSpend owner={owner} />
    </section>
  );
}

function OwnerAlerts({ owner }: { owner: OwnerView }) {
  const alerts = useLoad(() => listAlerts(owner.id, ALERTS_SHOWN), [owner.id]);
  return (
    <>
      <h3>Recent budget alerts</h3>
      <ListView
        list={alerts}
        rows={alerts.data?.data}
        what="alerts"
        errorTitle="Alerts could not be loaded."
        empty={owner.alerts.length === 0 ? `${owner.id} has no alerts set.` : 'None has fired yet.'}
      >
        {(rows) => (
          <ScrollTable label={`Budget alerts of ${owner.id}`} class="compact">
            <thead>
              <tr>
                <th scope="col">Threshold</th>
                <th scope="col">Fired</th>
                <th scope="col" class="number">
                  Used of budget
                </th>
                <th scope="col">Delivered</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((alert) => (
                <tr key={alert.id}>
                  <th scope="row">{alert.threshold}%</th>
                  <td>
                    <Time iso={alert.fired_at} />
                  </td>
                  <td class="number">
                    {amount(alert.used)} of {amount(alert.budget)}
                  </td>
                  <td class="wrap">
                    <AlertDelivery alert={alert} />
                  </td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </ListView>
    </>
  );
}

function AlertDelivery({ alert }: { alert: AlertView }) {
  if (alert.delivered_at !== null) return <Time iso={alert.delivered_at} />;
  return (
    <>
      Not yet
      {alert.attempts > 0 && ` (${count(alert.attempts)} ${alert.attempts === 1 ? 'attempt' : 'attempts'}${alert.last_error ? `: ${alert.last_error}` : ''})`}
    </>
  );
}

function OwnerKeys({ owner }: { owner: OwnerView }) {
  const keys = useLoad(() => listAllKeys(owner.id), [owner.id]);
  const [renewing, setRenewing] = useState(false);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  return (
    <>
      <h3>Keys</h3>
      {notice && <Notice>{notice}</Notice>}
      <ListView list={keys} rows={keys.data} what="keys" errorTitle="Keys could not be loaded." empty={`${owner.id} has no keys.`}>
        {(rows) => (
          <ScrollTable label={`Keys of ${owner.id}`} class="compact">
            <thead>
              <tr>
                <th scope="col">Prefix</th>
                <th scope="col">Models</th>
                <th scope="col">Status</th>
                <th scope="col">Expires</th>
                <th scope="col">Own rate limits</th>
                <th scope="col">Own budget</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((key) => (
                <tr key={key.id}>
                  <th scope="row">
                    <code>{key.prefix}</code>
                  </th>
                  <td>{modelsScope(key.models)}</td>
                  <td>
                    <KeyState keyView={key} />
                  </td>
                  <td>
                    <Time iso={key.expires_at} empty="Never" />
                  </td>
                  <td class="limits-cell">
                    <LimitsSummary limits={key.limits} none="None" />
                  </td>
                  <td>
                    <KeyBudgetSummary keyView={key} />
                  </td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </ListView>
      <p class="actions">
        <a href={href('keys', { owner: owner.id })}>Manage the keys of {owner.id}</a>
        {owner.kind === 'project' && !renewing && (
          <button type="button" class="button-secondary" onClick={() => setRenewing(true)}>
            Renew every key of {owner.id}
          </button>
        )}
      </p>
      {renewing && (
        <RenewForm
          label={`Renew every key of ${owner.id}`}
          submitText="Renew every key"
          onCancel={() => setRenewing(false)}
          onRenew={async (expiresAt) => {
            const renewed = await renewProjectKeys(owner.id, expiresAt);
            setRenewing(false);
            setNotice(`${count(renewed.data.length)} ${renewed.data.length === 1 ? 'key' : 'keys'} of ${owner.id} renewed.`);
            keys.reload();
          }}
        >
          <p>A project's keys are renewed together: every key of {owner.id} gets this expiry.</p>
        </RenewForm>
      )}
    </>
  );
}

function OwnerSpend({ owner }: { owner: OwnerView }) {
  const today = utcDay(new Date());
  const from = addDays(today, -(SPEND_DAYS - 1));
  const totals = useLoad(() => dailyTotals({ from, to: today, owner: owner.id }), [owner.id, from, today]);
  const view = useMemo(() => {
    if (!totals.data) return undefined;
    const days = daysBetween(from, today);
    return { days, total: totalsOf(totals.data), byModel: seriesBy(totals.data, days, (row) => row.model) };
  }, [totals.data, from, today]);

  return (
    <>
      <h3>Recent spend</h3>
      <Busy loading={totals.loading}>
        {totals.loading && !view && <Loading what="spend" />}
        <ErrorAlert error={totals.error} title="Spend could not be loaded." />
        {view && (
          <>
            <p>
              Last {SPEND_DAYS} days: <strong>{amountFromNano(view.total.nano)}</strong> over {count(view.total.calls)} calls ({count(view.total.failedCalls)}{' '}
              failed). <a href={href('calls', { owner: owner.id })}>See the calls of {owner.id}</a>
            </p>
            <SpendChart caption={`Spend of ${owner.id} per day by model, ${from} to ${today} (UTC)`} days={view.days} series={view.byModel} groupName="model" />
          </>
        )}
      </Busy>
    </>
  );
}
