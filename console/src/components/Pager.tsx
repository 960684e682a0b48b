/** Previous / Next page buttons of a paged list, with the page number for context. */
export function Pager({
  label,
  pageNumber,
  hasNext,
  onPrevious,
  onNext,
  busy,
}: {
  label: string;
  pageNumber: number;
  hasNext: boolean;
  onPrevious: () => void;
  onNext: () => void;
  busy: boolean;
}) {
  if (pageNumber === 1 && !hasNext) return null;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" class="button-secondary" onClick={onPrevious} disabled={pageNumber === 1 || busy}>
        Previous page
      </button>
      <span>Page {pageNumber}</span>
      <button type="button" class="button-secondary" onClick={onNext} disabled={!hasNext || busy}>
        Next page
      </button>
    </nav>
  );
}
