import { type ComponentChildren, Fragment } from 'preact';
import { amountFromNano, count, milliseconds } from '../format';
import { href } from '../router';
import type { UsageRecordView } from '../types';
import { StatusBadge } from './StatusBadge';
import { ScrollTable } from './Table';
import { Time } from './Time';

function Field({ name, children }: { name: string; children?: ComponentChildren }) {
  return (
    <div class="field">
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}

const none = <span class="muted">—</span>;

/** Every field of one call's usage record. */
export function UsageDetail({ record }: { record: UsageRecordView }) {
  const figures = Object.entries(record.usage ?? {});
  return (
    <div class="usage-detail">
      <dl class="fields">
        <Field name="Request id">
          <code>{record.request_id}</code>
        </Field>
        <Field name="Client request id">{record.client_request_id === null ? none : <code>{record.client_request_id}</code>}</Field>
        <Field name="Status">
          <StatusBadge status={record.status} />
        </Field>
        <Field name="Error code">{record.error_code === null ? none : <code>{record.error_code}</code>}</Field>
        <Field name="Owner">
          <a href={href('calls', { owner: record.owner_id })}>{record.owner_id}</a>
        </Field>
        <Field name="Key id">
          <code>{record.key_id}</code>
        </Field>
        <Field name="Model">{record.model}</Field>
        <Field name="Interface">{record.interface}</Field>
        <Field name="Line">{record.line ?? none}</Field>
        <Field name="Attempts">{count(record.attempts)}</Field>
        {record.lines_tried.length > 1 && (
          <Field name="Lines tried">
            {record.lines_tried.map((line, index) => (
              // A line tried again is listed again: the place keys it.
              <Fragment key={index}>
                {index > 0 && (
                  <>
                    <span aria-hidden="true"> → </span>
                    <span class="visually-hidden">, then </span>
                  </>
                )}
                {line}
              </Fragment>
            ))}
          </Field>
        )}
        <Field name="Translated to">{record.translated_to ?? <span class="muted">not translated</span>}</Field>
        <Field name="Streamed">{record.stream ? 'Yes' : 'No'}</Field>
        <Field name="Cost">
          <span class="number">{amountFromNano(record.cost_nano)}</span> <span class="muted">({record.cost_nano} nano-units)</span>
        </Field>
        <Field name="Started">
          <Time iso={record.started_at} />
        </Field>
        <Field name="Duration">{milliseconds(record.duration_ms)}</Field>
        <Field name="Upstream headers after">{milliseconds(record.upstream_headers_ms)}</Field>
        <Field name="Stored">{record.written ? 'Written to the database' : 'Still queued for the database'}</Field>
      </dl>
      <h3>Figures</h3>
      {figures.length === 0 ? (
        <p class="muted">No usage figures were recorded for this call.</p>
      ) : (
        <ScrollTable label="Usage figures" class="compact">
          <thead>
            <tr>
              <th scope="col">Figure</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {figures.map(([name, value]) => (
              <tr key={name}>
                <th scope="row">{name}</th>
                <td class="number">{count(value)}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </div>
  );
}
