/** An HTTP status with its class in words, so colour is never the only sign. */
export function StatusBadge({ status }: { status: number }) {
  const kind = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'ok';
  const words = status >= 500 ? 'server error' : status >= 400 ? 'client error' : status >= 200 && status < 300 ? 'success' : '';
  return (
    <span class={`badge badge-${kind}`}>
      {status}
      {words && <span class="badge-words"> {words}</span>}
    </span>
  );
}
