import { useAction } from '../hooks';
import { ErrorAlert } from './Status';

/** On an item of the configuration file: the file wins again at every start. */
export function FromFileNote({ kind }: { kind: 'line' | 'model' }) {
  return (
    <p class="alert alert-info">
      This {kind} comes from the configuration file: the file's values are applied again at every start (and reload), so a change made here lasts until then.
    </p>
  );
}

/** A 409 on a change: the item's version moved on since the form was opened. */
export function Conflict({ onReload }: { onReload: () => Promise<void> }) {
  const action = useAction();
  return (
    <>
      <div class="alert alert-error" role="alert">
        <p>
          <strong>Someone else changed this item since you opened it.</strong> Nothing was saved. Reload the item to see its current values, then make your
          change again.
        </p>
        <button type="button" class="button-secondary" disabled={action.busy} onClick={() => void action.run(onReload)}>
          {action.busy ? 'Reloading…' : 'Reload the item'}
        </button>
      </div>
      <ErrorAlert error={action.error} title="The item could not be read again." />
    </>
  );
}
