import type { PagedList } from '../hooks';

/** Previous / Next page buttons of a paged list, with the page number for context. */
export function Pager({ label, list }: { label: string; list: PagedList<unknown> }) {
  if (!list.data || (list.pageNumber === 1 && !list.hasNext)) return null;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" class="button-secondary" onClick={list.previous} disabled={list.pageNumber === 1 || list.loading}>
        Previous page
      </button>
      <span>Page {list.pageNumber}</span>
      <button type="button" class="button-secondary" onClick={list.next} disabled={!list.hasNext || list.loading}>
        Next page
      </button>
    </nav>
  );
}
