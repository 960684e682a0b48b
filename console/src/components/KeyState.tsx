import type { KeyView } from '../types';

export function keyState(key: KeyView, now = Date.now()): 'Disabled' | 'Expired' | 'Active' {
  if (!key.enabled) return 'Disabled';
  if (key.expires_at !== null && Date.parse(key.expires_at) <= now) return 'Expired';
  return 'Active';
}

export function KeyState({ keyView }: { keyView: KeyView }) {
  const state = keyState(keyView);
  const kind = state === 'Active' ? 'ok' : state === 'Expired' ? 'warn' : 'off';
  return <span class={`badge badge-${kind}`}>{state}</span>;
}
