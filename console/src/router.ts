import { useEffect, useState } from 'preact/hooks';

/** Hash routes (`#/owners`, `#/calls?owner=team-a`): the page is one static file served at /console/. */

export const PAGES = [
  { id: 'overview', title: 'Overview' },
  { id: 'owners', title: 'Owners' },
  { id: 'keys', title: 'Keys' },
  { id: 'catalog', title: 'Models and lines' },
  { id: 'calls', title: 'Calls' },
  { id: 'video', title: 'Video tasks' },
  { id: 'audit', title: 'Audit log' },
] as const;

export type PageId = (typeof PAGES)[number]['id'];

export interface Route {
  page: PageId;
  params: URLSearchParams;
}

function isPage(id: string): id is PageId {
  return PAGES.some((page) => page.id === id);
}

export function parseRoute(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  return { page: isPage(path) ? path : 'overview', params: new URLSearchParams(search) };
}

export function href(page: PageId, params: Record<string, string> = {}): string {
  const search = new URLSearchParams(params).toString();
  return `#/${page}${search === '' ? '' : `?${search}`}`;
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return parseRoute(hash);
}
