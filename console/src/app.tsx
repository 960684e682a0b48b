import { useEffect, useRef, useState } from 'preact/hooks';
import { currentSession, signOut, whenSessionEnds } from './api';
import { Header } from './components/Header';
import { SignIn, type SignInNotice } from './components/SignIn';
import { ErrorAlert, Loading } from './components/Status';
import { AuditPage } from './pages/Audit';
import { CallsPage } from './pages/Calls';
import { CatalogPage } from './pages/Catalog';
import { KeysPage } from './pages/Keys';
import { OverviewPage } from './pages/Overview';
import { OwnersPage } from './pages/Owners';
import { VideoTasksPage } from './pages/VideoTasks';
import { PAGES, type Route, useRoute } from './router';
import type { SessionView } from './types';

type SessionState =
  { phase: 'checking' } | { phase: 'failed'; error: unknown } | { phase: 'signed-out'; notice?: SignInNotice } | { phase: 'signed-in'; session: SessionView };

export function App() {
  const [state, setState] = useState<SessionState>({ phase: 'checking' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    whenSessionEnds(() => setState({ phase: 'signed-out', notice: { text: 'Your session has ended. Sign in again.', urgent: true } }));
  }, []);

  useEffect(() => {
    currentSession().then(
      (session) => setState(session ? { phase: 'signed-in', session } : { phase: 'signed-out' }),
      (error: unknown) => setState({ phase: 'failed', error }),
    );
  }, [attempt]);

  switch (state.phase) {
    case 'checking':
      return (
        <main id="main" class="sign-in" aria-busy="true">
          <Loading what="the console" />
        </main>
      );
    case 'failed':
      return (
        <main id="main" class="sign-in">
          <div class="panel sign-in-panel">
            <h1>The console could not start</h1>
            <ErrorAlert error={state.error} title="The sign-in could not be checked." />
            <button
              type="button"
              onClick={() => {
                setState({ phase: 'checking' });
                setAttempt((value) => value + 1);
              }}
            >
              Try again
            </button>
          </div>
        </main>
      );
    case 'signed-out':
      return <SignIn notice={state.notice} onSignedIn={(session) => setState({ phase: 'signed-in', session })} />;
    case 'signed-in':
      return (
        <SignedIn
          actor={state.session.actor}
          onSignOut={async () => {
            try {
              await signOut();
            } catch {
              // Signed out either way: the page forgets its CSRF token, and an ended session is no session.
            }
            setState({ phase: 'signed-out', notice: { text: 'You are signed out.', urgent: false } });
          }}
        />
      );
  }
}

function SignedIn({ actor, onSignOut }: { actor: string; onSignOut: () => Promise<void> }) {
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const firstRender = useRef(true);
  const title = PAGES.find((page) => page.id === route.page)?.title ?? '';

  useEffect(() => {
    document.title = `${title} · Model gateway console`;
    // After a navigation, move focus to the new page's heading so a screen reader starts there.
    if (firstRender.current) firstRender.current = false;
    else main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [route.page]);

  useEffect(
    () => () => {
      document.title = 'Model gateway console';
    },
    [],
  );

  return (
    <>
      <a
        class="skip-link"
        href="#main"
        onClick={(event) => {
          // The hash is the router's, so move focus without changing it.
          event.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to main content
      </a>
      <Header current={route.page} actor={actor} onSignOut={onSignOut} />
      <main id="main" ref={main} tabIndex={-1} class="content">
        <CurrentPage route={route} />
      </main>
    </>
  );
}

function CurrentPage({ route }: { route: Route }) {
  switch (route.page) {
    case 'overview':
      return <OverviewPage />;
    case 'owners':
      return <OwnersPage params={route.params} />;
    case 'keys':
      return <KeysPage params={route.params} />;
    case 'catalog':
      return <CatalogPage />;
    case 'calls':
      return <CallsPage params={route.params} />;
    case 'video':
      return <VideoTasksPage params={route.params} />;
    case 'audit':
      return <AuditPage />;
  }
}
