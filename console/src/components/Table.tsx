import type { ComponentChildren } from 'preact';

/**
 * A table in a box of its own that scrolls sideways, so the page never gets wider than the
 * screen; the box is named and focusable, so a keyboard can scroll it too.
 */
export function ScrollTable({
  labelledBy,
  label,
  class: tableClass,
  children,
}: {
  labelledBy?: string;
  label?: string;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-scroll" tabIndex={0} role="region" aria-labelledby={labelledBy} aria-label={label}>
      <table class={tableClass}>{children}</table>
    </div>
  );
}

/** A row under an item's row that holds a form about it (a change, a confirm step), across every column. */
export function FormRow({ columns, children }: { columns: number; children: ComponentChildren }) {
  return (
    <tr class="row-form">
      <td colSpan={columns}>{children}</td>
    </tr>
  );
}
