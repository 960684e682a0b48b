import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, signIn } from '../api';
import type { SessionView } from '../types';
import { ErrorAlert } from './Status';

/**
 * The admin token goes only into the body of POST /admin/session; it is kept in the input
 * until the answer, then dropped with this form.
 */
export interface SignInNotice {
  text: string;
  /** An ended session is announced at once; a sign-out the operator asked for, politely. */
  urgent: boolean;
}

export function SignIn({ notice, onSignedIn }: { notice?: SignInNotice; onSignedIn: (session: SessionView) => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => input.current?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await signIn(token);
      setToken('');
      onSignedIn(session);
    } catch (caught) {
      setError(caught instanceof ApiError && caught.status === 401 ? new Error('That admin token is not valid.') : caught);
      setBusy(false);
      input.current?.focus();
    }
  };

  return (
    <main id="main" class="sign-in">
      <div class="panel sign-in-panel">
        <p class="brand brand-large">Model gateway console</p>
        <h1>Sign in</h1>
        {notice && (
          <p class={notice.urgent ? 'alert alert-warn' : 'alert alert-info'} role={notice.urgent ? 'alert' : 'status'}>
            {notice.text}
          </p>
        )}
        <form onSubmit={(event) => void submit(event)}>
          <div class="control">
            <label for="admin-token">Admin token</label>
            <input
              id="admin-token"
              ref={input}
              type="password"
              autoComplete="current-password"
              required
              value={token}
              onInput={(event) => setToken(event.currentTarget.value)}
              aria-describedby="admin-token-hint"
            />
            <p id="admin-token-hint" class="hint">
              ADMIN_TOKEN or one of ADMIN_TOKENS. It is sent once to sign in and never stored by this page.
            </p>
          </div>
          <ErrorAlert error={error} />
          <button type="submit" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      </div>
    </main>
  );
}
