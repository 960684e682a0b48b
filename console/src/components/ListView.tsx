import type { ComponentChildren } from 'preact';
import type { PagedList } from '../hooks';
import { Pager } from './Pager';
import { Busy, ErrorAlert, Loading } from './Status';

interface ListViewProps<T> {
  list: { loading: boolean; error: unknown };
  /** The loaded rows; undefined before the first answer and after an error. */
  rows: T[] | undefined;
  /** What the loading note names: "Loading calls…". */
  what: string;
  errorTitle: string;
  empty: ComponentChildren;
  children: (rows: T[]) => ComponentChildren;
}

/**
 * A loaded list in its busy region: the loading note, the error, the note that it is empty, or its
 * rows. A reload keeps the rows shown and says nothing, unless `noteEveryLoad` (a paged list, whose
 * next page replaces them).
 */
export function ListView<T>({
  list,
  rows,
  what,
  errorTitle,
  empty,
  children,
  noteEveryLoad = false,
  footer,
}: ListViewProps<T> & { noteEveryLoad?: boolean; footer?: ComponentChildren }) {
  return (
    <Busy loading={list.loading}>
      {list.loading && (noteEveryLoad || rows === undefined) && <Loading what={what} />}
      <ErrorAlert error={list.error} title={errorTitle} />
      {rows && rows.length === 0 && <p class="empty">{empty}</p>}
      {rows && rows.length > 0 && children(rows)}
      {footer}
    </Busy>
  );
}

/** A page of a filtered list (`usePagedList`), with its Previous and Next buttons. */
export function PagedListView<T>({ list, label, ...props }: Omit<ListViewProps<T>, 'list' | 'rows'> & { list: PagedList<T>; label: string }) {
  return <ListView {...props} list={list} rows={list.data?.data} noteEveryLoad footer={<Pager label={label} list={list} />} />;
}
