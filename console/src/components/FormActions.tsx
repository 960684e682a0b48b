/** A form's submit button, which says so while the submit runs, and its Cancel when it has one. */
export function FormActions({ busy, busyText, submitText, onCancel }: { busy: boolean; busyText: string; submitText: string; onCancel?: () => void }) {
  return (
    <div class="actions">
      <button type="submit" disabled={busy}>
        {busy ? busyText : submitText}
      </button>
      {onCancel && (
        <button type="button" class="button-secondary" onClick={onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}
