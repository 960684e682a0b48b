import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { defaultSettings } from '../src/config/gateway-options';
import { CONSOLE_CSP } from '../src/console/console-page';
import { ADMIN_AUTH, Answer, httpCall, ISO_INSTANT } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';

/**
 * The operator console's page and sign-in (docs/console.md): static files under /console/ with
 * a strict Content-Security-Policy, and an admin token exchanged for an HttpOnly, SameSite=Strict
 * cookie plus a CSRF token that every change made with the cookie must carry.
 */

const ALICE_TOKEN = 'alice-console-token';
const TWELVE_HOURS_S = 12 * 3600;

/** The `name=value` part of the sign-in cookie an answer set, and its attributes. */
function cookieOf(answer: Answer): { pair: string; attributes: string[] } {
  const [pair, ...attributes] = (answer.headers.get('set-cookie') ?? '').split(';').map((part) => part.trim());
  return { pair: pair ?? '', attributes };
}

async function signIn(gateway: GatewayHarness, token = ALICE_TOKEN, headers: Record<string, string> = {}) {
  const answer = await httpCall(gateway.url, 'POST', '/admin/session', { token }, headers);
  return { answer, cookie: { cookie: cookieOf(answer).pair }, csrf: answer.body?.csrf_token as string };
}

describe('the operator console', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      settings: {
        adminTokens: [{ name: 'alice', token: ALICE_TOKEN }],
        server: { ...defaultSettings().server, trustedProxies: ['127.0.0.1'] },
      },
    });
  });

  afterAll(() => gateway?.stop());

  describe('its page', () => {
    it('is served at /console/ with a Content-Security-Policy that allows no inline script or style and no framing', async () => {
      const page = await httpCall(gateway.url, 'GET', '/console/', undefined, {});

      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.text).toContain('<script type="module" src="app.js"></script>');
      expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(CONSOLE_CSP).toContain("script-src 'self';");
      expect(CONSOLE_CSP).toContain("style-src 'self';");
      expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
      expect(CONSOLE_CSP).not.toContain('unsafe');
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    });

    it('serves its script and style sheet, answers 304 to a revalidation, and 404 in the error shape for any other file', async () => {
      const script = await httpCall(gateway.url, 'GET', '/console/app.js', undefined, {});
      const style = await httpCall(gateway.url, 'GET', '/console/app.css', undefined, {});
      const again = await fetch(`${gateway.url}/console/app.js`, { headers: { 'if-none-match': script.headers.get('etag')! } });
      const missing = await httpCall(gateway.url, 'GET', '/console/../package.json', undefined, {});
      const other = await httpCall(gateway.url, 'GET', '/console/secrets.json', undefined, {});

      expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
      expect(script.text.length).toBeGreaterThan(1000);
      // The whole page's script, bundled: at most ~300 KB gzipped.
      expect(gzipSync(Buffer.from(script.text)).length).toBeLessThan(300 * 1024);
      expect([style.status, style.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
      expect(again.status).toBe(304);
      expect(missing.status).toBe(404);
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ error: expect.objectContaining({ code: 'not_found' }) });
    });

    it('sends /console on to /console/', async () => {
      const answer = await fetch(`${gateway.url}/console`, { redirect: 'manual' });

      expect(answer.status).toBe(308);
      expect(answer.headers.get('location')).toBe('/console/');
    });
  });

  describe('sign-in', () => {
    it('refuses a token that is not an admin token with 401 and sets no cookie', async () => {
      const { answer } = await signIn(gateway, 'not-a-token');

      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('invalid_api_key');
      expect(answer.headers.get('set-cookie')).toBeNull();
    });

    it('refuses a body without a token with 400 naming the field', async () => {
      const answer = await httpCall(gateway.url, 'POST', '/admin/session', {}, {});

      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toMatch(/^token: /);
    });

    it('sets an HttpOnly, SameSite=Strict cookie for the admin API only, lasting CONSOLE_SESSION_HOURS, and answers the actor and a CSRF token', async () => {
      const { answer, csrf } = await signIn(gateway);
      const { pair, attributes } = cookieOf(answer);

      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ signed_in: true, actor: 'alice', csrf_token: csrf, expires_at: expect.stringMatching(ISO_INSTANT) });
      expect(csrf).toMatch(/^[\w-]{32}$/);
      expect(pair).toMatch(/^gateway_console=[\w-]{43}$/);
      expect(pair).not.toContain(ALICE_TOKEN);
      expect(attributes).toEqual(expect.arrayContaining(['Path=/admin', 'HttpOnly', 'SameSite=Strict']));
      expect(attributes).not.toContain('Secure');
      const maxAge = Number(attributes.find((attribute) => attribute.startsWith('Max-Age='))!.slice('Max-Age='.length));
      expect(maxAge).toBeGreaterThan(TWELVE_HOURS_S - 5);
      expect(maxAge).toBeLessThanOrEqual(TWELVE_HOURS_S);
    });

    it('marks the cookie Secure when a trusted proxy says the client came over HTTPS', async () => {
      const { answer } = await signIn(gateway, ALICE_TOKEN, { 'x-forwarded-proto': 'https' });

      expect(cookieOf(answer).attributes).toContain('Secure');
    });

    it('stores only a digest of the cookie', async () => {
      const { cookie } = await signIn(gateway);
      const value = cookie.cookie.split('=')[1]!;

      const rows: Array<Record<string, unknown>> = await gateway.dataSource.query('SELECT * FROM console_session');
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(value);
    });
  });

  describe('a signed-in cookie', () => {
    it('reads the admin API, and GET /admin/session gives the page its actor and CSRF token again', async () => {
      const { cookie, csrf } = await signIn(gateway);

      const owners = await httpCall(gateway.url, 'GET', '/admin/owners', undefined, cookie);
      const session = await httpCall(gateway.url, 'GET', '/admin/session', undefined, cookie);

      expect(owners.status).toBe(200);
      expect(session.body).toEqual({ signed_in: true, actor: 'alice', csrf_token: csrf, expires_at: expect.stringMatching(ISO_INSTANT) });
    });

    it('changes nothing without its CSRF token (403), and acts as the token holder with it, named in the audit log', async () => {
      const { cookie, csrf } = await signIn(gateway);
      const owner = { id: 'console-team', kind: 'project', budget: 5 };

      const without = await httpCall(gateway.url, 'POST', '/admin/owners', owner, cookie);
      const wrong = await httpCall(gateway.url, 'POST', '/admin/owners', owner, { ...cookie, 'x-csrf-token': `${csrf}x` });
      const stillNone = await httpCall(gateway.url, 'GET', '/admin/owners/console-team');
      const made = await httpCall(gateway.url, 'POST', '/admin/owners', owner, { ...cookie, 'x-csrf-token': csrf });
      const audit = await httpCall(gateway.url, 'GET', '/admin/audit?item_id=console-team');
      const signIns = await httpCall(gateway.url, 'GET', '/admin/audit?item_kind=session');

      expect([without.status, without.body.error.code]).toEqual([403, 'forbidden']);
      expect([wrong.status, wrong.body.error.code]).toEqual([403, 'forbidden']);
      expect(stillNone.status).toBe(404);
      expect(made.status).toBe(201);
      expect(audit.body.data).toEqual([expect.objectContaining({ actor: 'alice', action: 'owner.create' })]);
      expect(signIns.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ actor: 'alice', action: 'session.sign_in' })]));
    });

    it('does not stand in for a wrong bearer token sent with it', async () => {
      const { cookie } = await signIn(gateway);

      const answer = await httpCall(gateway.url, 'GET', '/admin/owners', undefined, { ...cookie, authorization: 'Bearer wrong' });

      expect(answer.status).toBe(401);
    });

    it('opens nothing after sign-out, which needs the CSRF token and clears the cookie', async () => {
      const { cookie, csrf } = await signIn(gateway);

      const without = await httpCall(gateway.url, 'DELETE', '/admin/session', undefined, cookie);
      const out = await httpCall(gateway.url, 'DELETE', '/admin/session', undefined, { ...cookie, 'x-csrf-token': csrf });
      const after = await httpCall(gateway.url, 'GET', '/admin/owners', undefined, cookie);

      expect(without.status).toBe(403);
      expect(out.status).toBe(204);
      expect(cookieOf(out)).toEqual({ pair: 'gateway_console=', attributes: expect.arrayContaining(['Max-Age=0', 'Path=/admin']) });
      expect(after.status).toBe(401);
      expect(after.body.error.message).toBe('The console session has ended: sign in again.');
      expect((await httpCall(gateway.url, 'GET', '/admin/session', undefined, cookie)).body).toEqual({ signed_in: false });
    });

    it('opens nothing with a made-up cookie', async () => {
      const answer = await httpCall(gateway.url, 'GET', '/admin/owners', undefined, { cookie: 'gateway_console=made-up' });

      expect(answer.status).toBe(401);
    });

    it('answers GET /admin/session with 200 and signed_in false without a session (a bearer token has none), so a page logs no failure', async () => {
      for (const headers of [ADMIN_AUTH, {}, { cookie: 'gateway_console=made-up' }] as Array<Record<string, string>>) {
        const answer = await httpCall(gateway.url, 'GET', '/admin/session', undefined, headers);

        expect([answer.status, answer.body]).toEqual([200, { signed_in: false }]);
      }
    });
  });

  it('ends a session at its expiry', async () => {
    const shortLived = await GatewayHarness.start({
      sharing: gateway,
      settings: { adminTokens: [{ name: 'alice', token: ALICE_TOKEN }], console: { sessionTtlMs: 300 } },
    });
    try {
      const { cookie } = await signIn(shortLived);
      expect((await httpCall(shortLived.url, 'GET', '/admin/owners', undefined, cookie)).status).toBe(200);

      await sleep(400);

      expect((await httpCall(shortLived.url, 'GET', '/admin/owners', undefined, cookie)).status).toBe(401);
    } finally {
      await shortLived.stop();
    }
  });

  it('does not exist without an admin token: the page and the sign-in answer 404', async () => {
    const closed = await GatewayHarness.start({ sharing: gateway, settings: { adminToken: undefined, adminTokens: [] } });
    try {
      expect((await httpCall(closed.url, 'GET', '/console/', undefined, {})).status).toBe(404);
      expect((await signIn(closed)).answer.status).toBe(404);
      expect((await httpCall(closed.url, 'GET', '/admin/session', undefined, {})).status).toBe(404);
    } finally {
      await closed.stop();
    }
  });
});
