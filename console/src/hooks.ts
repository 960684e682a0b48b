import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Page } from './types';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Data a view shows: loads on mount and whenever `deps` change; an answer that arrives after a
 * newer request started is dropped, so a slow old answer never replaces a new one.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    const request = ++latest.current;
    setState((previous) => ({ data: previous.data, error: undefined, loading: true }));
    load().then(
      (data) => {
        if (request === latest.current) setState({ data, error: undefined, loading: false });
      },
      (error: unknown) => {
        if (request === latest.current) setState({ data: undefined, error, loading: false });
      },
    );
    // `load` is a new closure each render; `deps` say when it reads something new.
  }, [...deps, generation]);

  useEffect(
    () => () => {
      latest.current = -1;
    },
    [],
  );

  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { ...state, reload };
}

export interface PagedList<T> extends Loaded<Page<T>> {
  pageNumber: number;
  hasNext: boolean;
  previous: () => void;
  next: () => void;
}

/**
 * One page of a list read with `limit` and an `after` cursor. The cursors of the pages seen are
 * kept, so Previous goes back without a cursor of its own; another `filterKey` (the filters as
 * text) starts again at the first page.
 */
export function usePagedList<T>(
  filterKey: string,
  load: (page: { limit: number; after: string | undefined }) => Promise<Page<T>>,
  limit: number,
): PagedList<T> {
  const [state, setState] = useState<{ key: string; cursors: Array<string | undefined> }>({ key: filterKey, cursors: [undefined] });
  const cursors = state.key === filterKey ? state.cursors : [undefined];
  const after = cursors[cursors.length - 1];
  const list = useLoad(() => load({ limit, after }), [filterKey, after]);
  const nextCursor = list.data?.next ?? null;
  return {
    ...list,
    pageNumber: cursors.length,
    hasNext: nextCursor !== null,
    previous: () => setState({ key: filterKey, cursors: cursors.length > 1 ? cursors.slice(0, -1) : cursors }),
    next: () => {
      if (nextCursor !== null) setState({ key: filterKey, cursors: [...cursors, nextCursor] });
    },
  };
}

/** Runs a change (a form's submit, a button's action) with its busy flag and error. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async (action: () => Promise<void>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (caught) {
      setError(caught);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run };
}
