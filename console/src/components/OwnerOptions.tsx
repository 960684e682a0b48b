import type { OwnerView } from '../types';

/**
 * The choices of an owner filter: any owner, then the owners loaded. An owner the filter names
 * that is not among them (not loaded yet, or unknown) is offered too, so the select shows it.
 */
export function OwnerOptions({ any, owners, chosen }: { any: string; owners: OwnerView[] | undefined; chosen: string }) {
  const ids = owners?.map((owner) => owner.id) ?? [];
  return (
    <>
      <option value="">{any}</option>
      {chosen !== '' && !ids.includes(chosen) && <option value={chosen}>{chosen}</option>}
      {ids.map((owner) => (
        <option key={owner} value={owner}>
          {owner}
        </option>
      ))}
    </>
  );
}
