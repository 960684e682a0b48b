import { utcTime } from '../format';

export function Time({ iso, empty = '—' }: { iso: string | null; empty?: string }) {
  if (iso === null) return <>{empty}</>;
  return <time dateTime={iso}>{utcTime(iso)}</time>;
}
