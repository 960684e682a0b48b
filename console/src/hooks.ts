import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

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

/**
 * Pages of a list: the `after` cursors of the pages seen, so Previous goes back without a cursor
 * of its own. Other filters (`filterKey`) start again at the first page.
 */
export function usePager(filterKey: string) {
  const [state, setState] = useState<{ key: string; cursors: Array<string | undefined> }>({ key: filterKey, cursors: [undefined] });
  const cursors = state.key === filterKey ? state.cursors : [undefined];
  return {
    after: cursors[cursors.length - 1],
    pageNumber: cursors.length,
    next: (cursor: string) => setState({ key: filterKey, cursors: [...cursors, cursor] }),
    previous: () => setState({ key: filterKey, cursors: cursors.length > 1 ? cursors.slice(0, -1) : cursors }),
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
