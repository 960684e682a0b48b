import { useState } from 'preact/hooks';
import { href, PAGES, type PageId } from '../router';

/** Product name, main navigation and the signed-in operator. */
export function Header({ current, actor, onSignOut }: { current: PageId; actor: string; onSignOut: () => Promise<void> }) {
  const [signingOut, setSigningOut] = useState(false);
  const signOut = () => {
    setSigningOut(true);
    void onSignOut().finally(() => setSigningOut(false));
  };
  return (
    <header class="site-header">
      <div class="header-inner">
        <a class="brand" href={href('overview')}>
          Model gateway console
        </a>
        <nav aria-label="Main" class="main-nav">
          <ul>
            {PAGES.map((page) => (
              <li key={page.id}>
                <a href={href(page.id)} aria-current={page.id === current ? 'page' : undefined}>
                  {page.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="account">
          <span class="actor">
            <span class="muted">Signed in as</span> <strong>{actor}</strong>
          </span>
          <button type="button" class="button-secondary button-small" onClick={signOut} disabled={signingOut}>
            {signingOut ? 'Signing out…' : 'Sign out'}
          </button>
        </div>
      </div>
    </header>
  );
}
