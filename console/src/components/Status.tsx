import type { ComponentChildren } from 'preact';
import { ApiError } from '../api';

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    // The admin API's only 403 is a change without the session's CSRF token: a reload fetches it again.
    if (error.status === 403 && error.code === 'forbidden') return `${error.message} Reload the page and try again.`;
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** A failure, announced at once: `title` says what failed, the gateway's message says why. */
export function ErrorAlert({ error, title }: { error: unknown; title?: string }) {
  if (error === undefined || error === null) return null;
  return (
    <div class="alert alert-error" role="alert">
      {title && <strong>{title} </strong>}
      {messageOf(error)}
    </div>
  );
}

export function Loading({ what = '' }: { what?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      Loading{what && ` ${what}`}…
    </p>
  );
}

/** A polite note, such as a change that went through. */
export function Notice({ children }: { children?: ComponentChildren }) {
  return (
    <p class="alert alert-ok" role="status">
      {children}
    </p>
  );
}

/** A region that shows its loading state to assistive technology too. */
export function Busy({ loading, label, children }: { loading: boolean; label?: string; children?: ComponentChildren }) {
  return (
    <div aria-busy={loading} aria-label={label} class="busy-region">
      {children}
    </div>
  );
}
