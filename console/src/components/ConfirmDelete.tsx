import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { useAction } from '../hooks';
import { ErrorAlert } from './Status';

const TITLES = { key: 'Key', line: 'Line', model: 'Model' } as const;

/**
 * The confirm step of a delete, opened under the item's row with focus on its button. A refusal
 * (a line still named by models, a stale version) is shown with the gateway's reason.
 */
export function ConfirmDelete({
  kind,
  name,
  source,
  question,
  note,
  warning,
  onConfirm,
  onFailed,
  onCancel,
}: {
  kind: keyof typeof TITLES;
  /** How the item is named in the group's label: "Delete key <name>". */
  name: string;
  source: string;
  question: ComponentChildren;
  /** What the delete does to calls. */
  note: string;
  warning?: string;
  onConfirm: () => Promise<void>;
  /** After a refusal, such as reading the list again for the current version. */
  onFailed?: () => void;
  onCancel: () => void;
}) {
  const action = useAction();
  const confirm = useRef<HTMLButtonElement>(null);

  useEffect(() => confirm.current?.focus(), []);
  return (
    <div class="confirm" role="group" aria-label={`Delete ${kind} ${name}`}>
      <p>
        <strong>{question}</strong> {note}
        {source === 'config' && ' It comes from the configuration file, so it comes back at the next start.'}
      </p>
      {warning && <p class="alert alert-warn">{warning}</p>}
      <ErrorAlert error={action.error} title={`${TITLES[kind]} not deleted.`} />
      <div class="actions">
        <button
          type="button"
          class="button-danger"
          disabled={action.busy}
          ref={confirm}
          onClick={() =>
            void action.run(onConfirm).then((done) => {
              if (!done) onFailed?.();
            })
          }
        >
          {action.busy ? 'Deleting…' : `Yes, delete the ${kind}`}
        </button>
        <button type="button" class="button-secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
