import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { isoFromLocal } from '../format';
import { useAction } from '../hooks';
import { FormActions } from './FormActions';
import { ErrorAlert } from './Status';

/** A new expiry for keys: a local date and time sent as an ISO time with zone, or "never". */
export function RenewForm({
  label,
  children,
  submitText,
  onRenew,
  onCancel,
}: {
  label: string;
  children?: ComponentChildren;
  submitText: string;
  onRenew: (expiresAt: string | null) => Promise<void>;
  onCancel: () => void;
}) {
  const id = useId();
  const [local, setLocal] = useState('');
  const [never, setNever] = useState(false);
  const action = useAction();
  const first = useRef<HTMLInputElement>(null);

  useEffect(() => first.current?.focus(), []);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const expiresAt = never ? null : isoFromLocal(local);
      if (expiresAt === undefined) throw new Error('expires_at: give a date and time, or choose "Never expires".');
      await onRenew(expiresAt);
    });
  };

  return (
    <form class="inline-form" onSubmit={submit} aria-label={label}>
      {children}
      <div class="form-row">
        <div class="control">
          <label for={`${id}-expiry`}>New expiry (your local time)</label>
          <input
            id={`${id}-expiry`}
            ref={first}
            type="datetime-local"
            value={local}
            disabled={never}
            required={!never}
            onInput={(event) => setLocal(event.currentTarget.value)}
          />
        </div>
        <div class="control control-check">
          <input id={`${id}-never`} type="checkbox" checked={never} onChange={(event) => setNever(event.currentTarget.checked)} />
          <label for={`${id}-never`}>Never expires</label>
        </div>
      </div>
      <ErrorAlert error={action.error} title="Not renewed." />
      <FormActions busy={action.busy} busyText="Renewing…" submitText={submitText} onCancel={onCancel} />
    </form>
  );
}
