import axe from 'axe-core';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { Browser, BrowserContext, chromium, Locator, Page } from 'playwright-core';
import { UpstreamSimulator } from '../simulator/upstream-simulator';
import { GatewayProcess, launchGateway } from '../support/gateway-process';
import { KEYS, standardConfigYaml, VENDOR_KEY } from '../support/test-config';
import { migratedFolder } from '../support/test-database';
import { until } from '../support/until';

/**
 * The operator console in a real browser (headless Chromium, Debian's package) against the
 * built gateway: sign in, create an owner and a key, make a real call with the key, find it by
 * its request id, disable the key, sign out. Every page is checked with axe-core and
 * photographed at 1280 and 390 px into test-results/console/.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = 'browser-admin-token-of-some-length';
const SHOTS = resolve(__dirname, '..', '..', 'test-results', 'console');
/** Each page by the name of its screenshots: the page's route, and one owner's page with its forms. */
const PAGES = {
  overview: 'overview',
  owners: 'owners',
  owner: 'owners?owner=browser-team',
  keys: 'keys',
  catalog: 'catalog',
  calls: 'calls',
  video: 'video',
  audit: 'audit',
} as const;
const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

/** What `read` gives once it is `wanted`, or what it still gives after 10 s (read every 50 ms). */
async function readUntil<T>(read: () => Promise<T>, wanted: T): Promise<T> {
  const deadline = Date.now() + 10_000;
  let current = await read();
  while (current !== wanted && Date.now() < deadline) {
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    current = await read();
  }
  return current;
}

/**
 * The element `field` has the focus, once the page has moved it there (forms focus their first
 * field after rendering). Read from here: `page.waitForFunction` polls by evaluating a string in
 * the page, which the console's Content-Security-Policy refuses (and logs as an error).
 */
async function expectFocused(page: Page, field: Locator): Promise<void> {
  const id = await field.getAttribute('id');
  expect(await readUntil(() => page.evaluate('document.activeElement?.id') as Promise<string | null>, id)).toBe(id);
}

/**
 * Opens an item's edit form by its row's Edit button, once the form has moved the focus into
 * itself (to its first field, after rendering). Typed before that, text could land in the field
 * the form then focuses: Playwright's `fill` focuses and selects the field, then inserts the text
 * into whatever has the focus.
 */
async function openEdit(page: Page, kind: 'model' | 'line', id: string): Promise<Locator> {
  const name = `Edit ${kind} ${id}`;
  await page.getByRole('button', { name }).click();
  const focusedForm = () => page.evaluate("document.activeElement?.closest('form')?.getAttribute('aria-label') ?? null") as Promise<string | null>;
  expect(await readUntil(focusedForm, name)).toBe(name);
  return page.getByRole('form', { name });
}

/** Serious and critical axe findings on the page as it is now, as readable lines. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  await page.evaluate(axe.source);
  // Browser code as text: the test's own types know nothing of the page's globals.
  const results = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as axe.AxeResults;
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(' ')).join(', ')})`);
}

/** The field's value once it is `value`, or what it still is after 10 s. */
const waitForValue = (field: Locator, value: string): Promise<string> => readUntil(() => field.inputValue(), value);

describe('the operator console in a browser', () => {
  let simulator: UpstreamSimulator;
  let gateway: GatewayProcess;
  let workDir: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Console errors and uncaught exceptions of every page, and every URL the browser asked for. */
  const browserErrors: string[] = [];
  const requested: string[] = [];
  const made = { key: '', prefix: '', requestId: '', cost: '', simulatorUrl: '' };
  /** The key made with a limit of one call a minute. */
  const limited = { key: '', id: '', prefix: '' };
  /** The key made with a tiny budget of its own. */
  const budgeted = { key: '', id: '', prefix: '' };

  function watch(watched: Page): Page {
    watched.on('console', (message) => {
      if (message.type() === 'error') browserErrors.push(`${message.text()} (${message.location().url})`);
    });
    watched.on('pageerror', (error) => browserErrors.push(error.message));
    watched.on('request', (request) => requested.push(request.url()));
    return watched;
  }

  /** Chromium logs every refused request as a console error: a refusal the test asked for is taken off the list. */
  function expectRefusalLogged(status: number, path: string): void {
    const logged = browserErrors.findIndex((text) => text.includes(`status of ${status}`) && text.includes(`${path})`));
    expect({ status, path, logged: logged >= 0 }).toEqual({ status, path, logged: true });
    browserErrors.splice(logged, 1);
  }

  async function signIn(onPage: Page): Promise<void> {
    await onPage.goto(`${gateway.url}/console/`);
    await onPage.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await onPage.getByRole('button', { name: 'Sign in' }).click();
    await onPage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }

  async function open(onPage: Page, name: string): Promise<void> {
    await onPage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
    await onPage.getByRole('heading', { level: 1, name }).waitFor();
  }

  function client(key: string): OpenAI {
    return new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  }

  async function adminGet(path: string): Promise<any> {
    const answer = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return answer.json();
  }

  /** A chat call with the key: its answer, or the error the SDK threw. */
  function chatWith(key: string, content: string): Promise<unknown> {
    return client(key)
      .chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content }] })
      .catch((error: unknown) => error);
  }

  /**
   * A key of browser-team for chat-model made on the Keys page, `fill` giving the rest of the form:
   * its key, id and prefix go into `into`; the key as the admin API shows it is returned.
   */
  async function createChatKey(into: { key: string; id: string; prefix: string }, fill: (form: Locator) => Promise<void>): Promise<any> {
    await open(page, 'Keys');
    await page.getByText('Create a key').click();
    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Owner', { exact: true }).selectOption('browser-team');
    await form.getByLabel('chat-model', { exact: true }).check();
    await fill(form);
    await form.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByLabel('New key');
    await field.waitFor();
    into.key = await field.inputValue();
    await page.getByRole('button', { name: 'I have stored the key' }).click();
    const stored = (await adminGet('/admin/keys?owner=browser-team')).data.find((key: { prefix: string }) => into.key.startsWith(key.prefix));
    Object.assign(into, { id: stored.id, prefix: stored.prefix });
    return stored;
  }

  /** After a refused save (400 from `path`): `problem` shown at the field, which is marked invalid, described by it and focused. */
  async function expectProblemAt(field: Locator, problem: string, path: string): Promise<void> {
    await page.getByText(problem).waitFor();
    expectRefusalLogged(400, path);
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await descriptionOf(field)).toContain(problem);
    await expectFocused(page, field);
  }

  /** The texts of the elements that describe a control (aria-describedby): its hints and problems. */
  async function descriptionOf(control: Locator): Promise<string> {
    const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(' ').filter((id) => id !== '');
    const texts = await Promise.all(ids.map((id) => control.page().locator(`[id="${id}"]`).textContent()));
    return texts.join(' ');
  }

  /** An exact amount as the console writes it (below 1 and with at least two decimals): nano-units `225000` as `0.000225`. */
  function amountText(nano: string): string {
    return (Number(nano) / 1e9).toFixed(9).replace(/0+$/, '').padEnd(4, '0');
  }

  /**
   * The screen as it is at 1280 and 390 px, `shown` scrolled into view, into `${name}-${width}.png`;
   * nothing may be wider than the screen. A full-page shot would leave out part of a form that stays
   * in view (sticky) in a table scrolled sideways. Back at 1280 px after.
   */
  async function photograph(name: string, shown: Locator): Promise<void> {
    for (const [width, viewport] of Object.entries(WIDTHS)) {
      await page.setViewportSize(viewport);
      await shown.scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(SHOTS, `${name}-${viewport.width}.png`) });
      expect({ width, overflow: await page.evaluate('document.documentElement.scrollWidth - window.innerWidth') }).toEqual({ width, overflow: 0 });
    }
    await page.setViewportSize(WIDTHS.desktop);
  }

  async function openOwner(id: string): Promise<Locator> {
    await page.goto(`${gateway.url}/console/#/owners?owner=${id}`);
    const detail = page.getByRole('region', { name: `Owner ${id}` });
    await detail.waitFor();
    return detail;
  }

  beforeAll(async () => {
    await rm(SHOTS, { recursive: true, force: true });
    await mkdir(SHOTS, { recursive: true });
    simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    const simulatorUrl = await simulator.start();
    workDir = await mkdtemp(join(tmpdir(), 'console-browser-'));
    const config = join(workDir, 'gateway.yaml');
    // The standard test catalog and one video model, so the video page has a task to show.
    const videoModel =
      '  - id: video-model\n    upstream_model: vendor-video-c-2\n    interfaces: [video_c]\n    lines: [line-a]\n    prices: { output_seconds: 0.05 }\n';
    await writeFile(config, standardConfigYaml(simulatorUrl).replace('owners:', `${videoModel}owners:`));
    made.simulatorUrl = simulatorUrl;
    gateway = await launchGateway({
      GATEWAY_CONFIG: config,
      DATA_DIR: await migratedFolder(workDir),
      ADMIN_TOKENS: `alice:${ADMIN_TOKEN}`,
      TEST_VENDOR_KEY: VENDOR_KEY,
      USAGE_FLUSH_INTERVAL_MS: '50',
    });
    await gateway.waitUntilReady();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    // Reduced motion: the page then draws its charts without animation, so screenshots show them whole.
    context = await browser.newContext({ viewport: WIDTHS.desktop, reducedMotion: 'reduce' });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway.url });
    page = watch(await context.newPage());
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await simulator?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  it('signs in with an admin token that goes into no URL', async () => {
    await signIn(page);

    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByText('alice').first().isVisible()).toBe(true);
    expect(requested.filter((url) => url.includes(ADMIN_TOKEN))).toEqual([]);
    const [cookie] = await context.cookies(gateway.url + '/admin');
    expect(cookie).toMatchObject({ name: 'gateway_console', httpOnly: true, sameSite: 'Strict', path: '/admin' });
  });

  it('creates an owner', async () => {
    await open(page, 'Owners');
    await page.getByText('Create an owner').click();
    await page.getByLabel('Owner id').fill('browser-team');
    await page.getByLabel('Kind').selectOption('project');
    await page.getByLabel('Budget (optional)').fill('10');
    await page.getByRole('button', { name: 'Create owner' }).click();

    await page.getByRole('cell', { name: 'browser-team' }).first().waitFor();
    expect((await adminGet('/admin/owners/browser-team')).budget).toBe(10);
  });

  it('says why when a change is refused: an owner id that exists already', async () => {
    const form = page.getByRole('form', { name: 'Create an owner' });
    if (!(await form.isVisible())) await page.getByText('Create an owner').click();
    await form.getByLabel('Owner id').fill('browser-team');
    await form.getByRole('button', { name: 'Create owner' }).click();

    await form.getByRole('alert').getByText('A quota owner with the id "browser-team" exists already.').waitFor();
    expectRefusalLogged(409, '/admin/owners');
  });

  it('works by keyboard alone: signing in and creating an owner', async () => {
    const keyboardContext = await browser.newContext({ viewport: WIDTHS.desktop, reducedMotion: 'reduce' });
    const keyboard = watch(await keyboardContext.newPage());
    /** Presses Tab until the focused control's accessible name starts with `name`. */
    const tabTo = async (name: string) => {
      for (let presses = 0; presses < 80; presses += 1) {
        await keyboard.keyboard.press('Tab');
        const focused = String(
          await keyboard.evaluate(
            "(() => { const e = document.activeElement; return (e?.getAttribute('aria-label') || e?.labels?.[0]?.textContent || e?.textContent || '').trim(); })()",
          ),
        );
        if (focused.startsWith(name)) return;
      }
      throw new Error(`no control named ${name} is reached by Tab`);
    };
    try {
      await keyboard.goto(`${gateway.url}/console/`);
      await tabTo('Admin token');
      await keyboard.keyboard.type(ADMIN_TOKEN);
      await keyboard.keyboard.press('Enter');
      await keyboard.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await tabTo('Owners');
      await keyboard.keyboard.press('Enter');
      await keyboard.getByRole('heading', { level: 1, name: 'Owners' }).waitFor();
      await tabTo('Create an owner');
      await keyboard.keyboard.press('Enter');
      await tabTo('Owner id');
      await keyboard.keyboard.type('keyboard-team');
      const createForm = keyboard.getByRole('form', { name: 'Create an owner' });
      // Said here rather than as a missing row 30 s later: a submit without the id is stopped by
      // the browser's own check of the required field, with no request and no console error.
      expect(await createForm.getByLabel('Owner id').inputValue()).toBe('keyboard-team');
      await tabTo('Create owner');
      expect(await keyboard.evaluate("document.activeElement?.closest('form')?.getAttribute('aria-label') ?? null")).toBe('Create an owner');
      await keyboard.keyboard.press('Enter');
      await keyboard.getByRole('cell', { name: 'keyboard-team' }).first().waitFor();

      expect((await adminGet('/admin/owners/keyboard-team')).id).toBe('keyboard-team');
    } finally {
      await keyboardContext.close();
    }
  });

  it('creates a key for it, shown once with a copy button that copies it', async () => {
    await open(page, 'Keys');
    await page.getByText('Create a key').click();
    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Owner', { exact: true }).selectOption('browser-team');
    await form.getByLabel('chat-model', { exact: true }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    const field = page.getByLabel('New key');
    await field.waitFor();
    made.key = await field.inputValue();
    await page.getByRole('button', { name: 'Copy' }).click();

    expect(made.key.length).toBeGreaterThan(20);
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(made.key);
    const keys = await adminGet('/admin/keys?owner=browser-team');
    expect(keys.data).toEqual([expect.objectContaining({ owner: 'browser-team', models: ['chat-model'], enabled: true })]);
    made.prefix = keys.data[0].prefix;
    expect(made.key.startsWith(made.prefix)).toBe(true);
  });

  it('finds a real call made with that key by its request id, with its cost', async () => {
    const { data, response } = await client(made.key)
      .chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello from the console test' }] })
      .withResponse();
    made.requestId = response.headers.get('x-request-id') ?? '';
    expect(data.choices[0]!.message.content).toEqual(expect.any(String));

    await open(page, 'Calls');
    await page.getByLabel('Request id').fill(made.requestId);
    await page.getByRole('button', { name: 'Look up' }).click();
    const record = await adminGet(`/admin/usage/${made.requestId}`);

    await page.getByText(`${record.cost_nano} nano-units`).waitFor();
    made.cost = String(record.cost);
    expect(record).toMatchObject({ owner_id: 'browser-team', status: 200 });
    expect(BigInt(record.cost_nano)).toBeGreaterThan(0n);
  });

  it("shows the owner's spend in the overview", async () => {
    await open(page, 'Overview');
    const byOwner = page.locator('figure', { hasText: 'Spend per day by owner' });
    await byOwner.getByText('Show the numbers as a table').click();

    const table = byOwner.getByRole('table');
    await table.getByRole('columnheader', { name: 'browser-team' }).waitFor();
    const today = table.getByRole('row', { name: new RegExp(`^${new Date().toISOString().slice(0, 10)}`) });
    expect(await today.textContent()).toContain(made.cost);
  });

  it('shows the calls of the last minutes and every line with its calls in flight and state', async () => {
    const minutes = page.locator('figure', { hasText: 'Calls and failed calls per minute' });
    await minutes.getByText('Show the numbers as a table').click();
    const lines = page.getByRole('region', { name: 'Lines' });

    // The call of the test before, in this minute or the one before it.
    expect(await minutes.getByRole('table').textContent()).toMatch(/[1-9]/);
    for (const line of ['line-a', 'line-b', 'line-dead', 'line-narrow']) await lines.getByRole('row', { name: new RegExp(`^${line}`) }).waitFor();
    expect(await lines.getByRole('row', { name: /^line-narrow/ }).textContent()).toContain('0 of 1');
  });

  it("edits a model's price, and the next call is billed at it", async () => {
    await open(page, 'Models and lines');
    const form = await openEdit(page, 'model', 'chat-model');
    let row = 1;
    while ((await form.getByLabel(`Price name ${row}`, { exact: true }).inputValue()) !== 'output_tokens') row += 1;
    await form.getByLabel(`Amount of price ${row}`, { exact: true }).fill('20');
    await form.getByRole('button', { name: 'Save model' }).click();
    await page.getByText('Model chat-model saved (version 2).').waitFor();

    const { response } = await client(made.key)
      .chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Priced anew' }] })
      .withResponse();
    const record = await adminGet(`/admin/usage/${response.headers.get('x-request-id')}`);
    // Per 1M tokens, in nano-units: input 2.5, output now 20 (was 10); rounded half up once.
    const expected = (BigInt(record.usage.input_tokens) * 2_500_000_000n + BigInt(record.usage.output_tokens) * 20_000_000_000n + 500_000n) / 1_000_000n;
    expect(record.usage.output_tokens).toBeGreaterThan(0);
    expect(BigInt(record.cost_nano)).toBe(expected);
    expect(Number((await adminGet('/admin/models/chat-model')).prices.output_tokens)).toBe(20);
  });

  it("gives a model a long-context price tier in its tiers' JSON, and a long call is billed at it for the whole call", async () => {
    await open(page, 'Models and lines');
    const editTiers = async (tiers: string, version: number) => {
      const form = await openEdit(page, 'model', 'chat-model');
      const field = form.getByLabel('Price tiers (JSON)', { exact: true });
      await field.fill(tiers);
      if (version === 3) await photograph('model-tiers-form', field);
      await form.getByRole('button', { name: 'Save model' }).click();
      await page.getByText(`Model chat-model saved (version ${version}).`).waitFor();
    };
    await editTiers('[{"input_tokens_above": 5, "prices": {"input_tokens": "7", "output_tokens": "30"}}]', 3);
    expect((await adminGet('/admin/models/chat-model')).price_tiers).toEqual([{ input_tokens_above: 5, prices: { input_tokens: '7', output_tokens: '30' } }]);

    const { response } = await client(made.key)
      .chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'A prompt longer than five tokens, priced at the tier' }] })
      .withResponse();
    const record = await adminGet(`/admin/usage/${response.headers.get('x-request-id')}`);
    // Per 1M tokens, in nano-units: the tier's input 7 and output 30 for the whole call.
    expect(record.usage.input_tokens).toBeGreaterThan(5);
    expect(BigInt(record.cost_nano)).toBe(
      (BigInt(record.usage.input_tokens) * 7_000_000_000n + BigInt(record.usage.output_tokens) * 30_000_000_000n + 500_000n) / 1_000_000n,
    );

    await editTiers('[]', 4);
    expect((await adminGet('/admin/models/chat-model')).price_tiers).toEqual([]);
  });

  it('adds a model with its interface, line and price, which a key of every model can call at once', async () => {
    await page.getByText('Add a model').first().click();
    const form = page.getByRole('form', { name: 'Add a model' });
    await form.getByLabel('Model id').fill('console-model');
    await form.getByLabel('Upstream model').fill('vendor-chat-2025-01');
    await form.getByRole('group', { name: 'Interfaces' }).getByLabel('chat_completions', { exact: true }).check();
    await form.getByRole('group', { name: 'Lines' }).getByLabel('line-b', { exact: true }).check();
    if (!(await form.getByLabel('Price name 1', { exact: true }).isVisible())) await form.getByRole('button', { name: 'Add a price' }).click();
    await form.getByLabel('Price name 1', { exact: true }).fill('output_tokens');
    await form.getByLabel('Amount of price 1', { exact: true }).fill('4');
    await form.getByRole('button', { name: 'Add model' }).click();
    await page.getByText('Model console-model added.').waitFor();

    const answer = await client(KEYS.all)
      .chat.completions.create({ model: 'console-model', messages: [{ role: 'user', content: 'New here' }] })
      .withResponse();
    const record = await adminGet(`/admin/usage/${answer.response.headers.get('x-request-id')}`);
    expect(record).toMatchObject({ model: 'console-model', line: 'line-b' });
    expect(BigInt(record.cost_nano)).toBe((BigInt(record.usage.output_tokens) * 4_000_000_000n + 500_000n) / 1_000_000n);
  });

  it('adds a model with weighted lines, a model name on one line and retries; refuses a weight out of range at its field', async () => {
    const form = page.getByRole('form', { name: 'Add a model' });
    if (!(await form.isVisible())) await page.getByText('Add a model').first().click();
    await form.getByLabel('Model id').fill('weighted-model');
    await form.getByLabel('Upstream model').fill('vendor-chat-2025-01');
    await form.getByRole('group', { name: 'Interfaces' }).getByLabel('chat_completions', { exact: true }).check();
    const lines = form.getByRole('group', { name: 'Lines' });
    await lines.getByLabel('line-a', { exact: true }).check();
    await lines.getByLabel('line-b', { exact: true }).check();
    const weightA = lines.getByLabel('Weight of line-a');
    const weightB = lines.getByLabel('Weight of line-b');
    await weightA.fill('-1');
    await weightB.fill('1001');
    await lines.getByLabel('Model on this line (line-b)').fill('deployment-b');
    await form.getByRole('group', { name: 'Retries (optional)' }).getByLabel('Retry attempts').fill('1');
    await form.getByRole('button', { name: 'Add model' }).click();

    // The console's own check: each weight's problem at its input, the first one focused, nothing sent.
    await form.getByText('lines[0].weight: must be a whole number from 0 to 1000').waitFor();
    for (const [field, problem] of [
      [weightA, 'lines[0].weight: must be a whole number from 0 to 1000'],
      [weightB, 'lines[1].weight: must be a whole number from 0 to 1000'],
    ] as const) {
      expect(await field.getAttribute('aria-invalid')).toBe('true');
      expect(await descriptionOf(field)).toContain(problem);
    }
    expect(await descriptionOf(weightA)).toContain("a call's first line is drawn by weight");
    await expectFocused(page, weightA);
    expect(await lines.getAttribute('aria-invalid')).toBeNull();
    expect(await form.getByRole('alert').textContent()).toContain('2 fields need a change');
    expect((await adminGet('/admin/models/weighted-model')).error.code).toBe('not_found');
    expect(await accessibilityProblems(page)).toEqual([]);
    await photograph('model-lines-form', lines);

    await weightA.fill('3');
    await weightB.fill('1');
    await form.getByRole('button', { name: 'Add model' }).click();
    await page.getByText('Model weighted-model added.').waitFor();

    const stored = await adminGet('/admin/models/weighted-model');
    expect(stored.lines).toEqual([
      { id: 'line-a', weight: 3 },
      { id: 'line-b', weight: 1, upstream_model: 'deployment-b' },
    ]);
    expect(stored.retry).toEqual({ attempts: 1 });
    const row = page.getByRole('region', { name: 'Models', exact: true }).getByRole('row', { name: /^weighted-model/ });
    await row.waitFor();
    const text = await row.textContent();
    for (const shown of ['line-a ×3', 'line-b ×1', 'as deployment-b', '1 retry after every line failed']) expect(text).toContain(shown);
    await photograph('model-lines-list', row.getByRole('cell').filter({ hasText: 'line-a ×3' }));
  });

  it("shows a weighted model's lines and retries again in its edit form, and clears them back to plain lines", async () => {
    const form = await openEdit(page, 'model', 'weighted-model');
    const lines = form.getByRole('group', { name: 'Lines' });
    const attempts = form.getByLabel('Retry attempts');
    expect(await waitForValue(lines.getByLabel('Weight of line-a'), '3')).toBe('3');
    expect(await lines.getByLabel('Weight of line-b').inputValue()).toBe('1');
    expect(await lines.getByLabel('Model on this line (line-a)').inputValue()).toBe('');
    expect(await lines.getByLabel('Model on this line (line-b)').inputValue()).toBe('deployment-b');
    expect(await attempts.inputValue()).toBe('1');
    expect(await lines.getByRole('list', { name: 'Tried in this order' }).getByRole('listitem').allTextContents()).toEqual([
      expect.stringMatching(/^line-a/),
      expect.stringMatching(/^line-b/),
    ]);

    await lines.getByLabel('Weight of line-a').fill('');
    await lines.getByLabel('Weight of line-b').fill('');
    await attempts.fill('');
    await form.getByRole('button', { name: 'Save model' }).click();
    await page.getByText('Model weighted-model saved (version 2).').waitFor();

    const stored = await adminGet('/admin/models/weighted-model');
    expect(stored.lines).toEqual(['line-a', { id: 'line-b', upstream_model: 'deployment-b' }]);
    expect(stored.retry).toBeUndefined();
  });

  it('reads the configuration file again, whose values win for its own items', async () => {
    await page.getByRole('button', { name: 'Read the configuration file again' }).click();

    await page.getByText('Applied 4 lines, 8 models, 3 owners and 6 keys from the file.').waitFor();
    expect(Number((await adminGet('/admin/models/chat-model')).prices.output_tokens)).toBe(10);
  });

  it('disables the key, and the next call with it gets 401', async () => {
    await open(page, 'Keys');
    await page.getByRole('button', { name: `Disable key ${made.prefix}` }).click();
    await page.getByRole('button', { name: `Enable key ${made.prefix}` }).waitFor();

    const refused = await client(made.key)
      .chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Still there?' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
  });

  it('enables the key again, and it is answered again', async () => {
    await page.getByRole('button', { name: `Enable key ${made.prefix}` }).click();
    await page.getByRole('button', { name: `Disable key ${made.prefix}` }).waitFor();

    const answer = await client(made.key).chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Back again?' }] });
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
  });

  it("changes an owner's budget, and shows the owner's keys", async () => {
    await open(page, 'Owners');
    await page.getByRole('button', { name: 'Change budget of browser-team' }).click();
    const form = page.getByRole('form', { name: 'Budget of browser-team' });
    await form.getByLabel('New budget of browser-team').fill('12.5');
    await form.getByRole('button', { name: 'Save budget' }).click();
    await form.waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'browser-team', exact: true }).first().click();

    await page.getByText(made.prefix).first().waitFor();
    expect((await adminGet('/admin/owners/browser-team')).budget).toBe(12.5);
  });

  it("sets an owner's rate limits on its page, shown with the owner and stored", async () => {
    const detail = await openOwner('browser-team');
    expect(await detail.getByRole('definition').filter({ hasText: 'No rate limits' }).count()).toBe(1);
    const form = detail.getByRole('form', { name: 'Rate limits of browser-team' });
    await form.getByLabel('Requests per minute').fill('600');
    await form.getByLabel('Tokens per minute').fill('200,000');
    await form.getByLabel('Calls at once').fill('20');
    await form.getByRole('button', { name: 'Save rate limits' }).click();

    await detail.getByText('600 requests/min · 200,000 tokens/min · 20 at once', { exact: true }).waitFor();
    expect((await adminGet('/admin/owners/browser-team')).limits).toEqual({ requests_per_minute: 600, tokens_per_minute: 200000, concurrent_requests: 20 });
    const row = page.getByRole('region', { name: 'Quota owners' }).getByRole('row', { name: /^browser-team/ });
    expect(await row.textContent()).toContain('600 requests/min · 200,000 tokens/min · 20 at once');
  });

  it('shows a refused limit at its field, marked invalid and focused', async () => {
    const detail = await openOwner('browser-team');
    const form = detail.getByRole('form', { name: 'Rate limits of browser-team' });
    const field = form.getByLabel('Requests per minute');
    await field.fill('0');
    await form.getByRole('button', { name: 'Save rate limits' }).click();

    await expectProblemAt(field, 'limits.requests_per_minute: must be a whole number from 1', '/admin/owners/browser-team');
    expect(await form.getByLabel('Tokens per minute').getAttribute('aria-invalid')).toBeNull();
    expect((await adminGet('/admin/owners/browser-team')).limits.requests_per_minute).toBe(600);
  });

  it('creates an owner with rate limits', async () => {
    await open(page, 'Owners');
    await page.getByText('Create an owner').click();
    const form = page.getByRole('form', { name: 'Create an owner' });
    await form.getByLabel('Owner id').fill('limited-team');
    await form.getByRole('group', { name: 'Rate limits (optional)' }).getByLabel('Calls at once').fill('5');
    await form.getByRole('button', { name: 'Create owner' }).click();

    await page.getByText('Owner limited-team created.').waitFor();
    expect((await adminGet('/admin/owners/limited-team')).limits).toEqual({ requests_per_minute: null, tokens_per_minute: null, concurrent_requests: 5 });
    expect(await page.getByRole('row', { name: /^limited-team/ }).textContent()).toContain('5 at once');
  });

  it('creates a key limited to 1 call a minute, whose second call is answered 429', async () => {
    const stored = await createChatKey(limited, (form) =>
      form.getByRole('group', { name: 'Rate limits of this key (optional)' }).getByLabel('Requests per minute').fill('1'),
    );

    expect(stored.limits).toEqual({ requests_per_minute: 1, tokens_per_minute: null, concurrent_requests: null });
    const row = page.getByRole('row', { name: new RegExp(`^${limited.prefix}`) });
    expect(await row.textContent()).toContain('1 request/min');

    const first = await chatWith(limited.key, 'One a minute');
    const second = await chatWith(limited.key, 'One more');
    expect(first).toMatchObject({ choices: [expect.objectContaining({ message: expect.objectContaining({ content: expect.any(String) }) })] });
    expect(second).toBeInstanceOf(OpenAI.RateLimitError);
    expect(second).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
  });

  it("clears a key's own limit from its row, after which it is answered again", async () => {
    await page.getByRole('button', { name: `Limits of key ${limited.prefix}` }).click();
    const form = page.getByRole('form', { name: `Rate limits of key ${limited.prefix}` });
    const field = form.getByLabel('Requests per minute');
    // The form opens with the key's limits, its first field focused.
    expect(await field.inputValue()).toBe('1');
    await expectFocused(page, field);
    expect(await form.textContent()).toContain('at present: 600 requests/min · 200,000 tokens/min · 20 at once');
    await photograph('key-limits', form);
    await field.fill('');
    await form.getByRole('button', { name: 'Save rate limits' }).click();

    await page.getByText(`Rate limits of key ${limited.prefix} saved: No rate limits.`).waitFor();
    expect((await adminGet(`/admin/keys/${limited.id}`)).limits).toBeNull();
    // The list is read again after the notice shows.
    await page
      .getByRole('row', { name: new RegExp(`^${limited.prefix}`) })
      .getByRole('cell', { name: 'None', exact: true })
      .waitFor();
    expect(await chatWith(limited.key, 'Free again')).toMatchObject({ choices: [expect.anything()] });
  });

  it("clears an owner's rate limits one by one, until it has none", async () => {
    const detail = await openOwner('browser-team');
    const form = detail.getByRole('form', { name: 'Rate limits of browser-team' });
    await form.getByLabel('Requests per minute').fill('');
    await form.getByRole('button', { name: 'Save rate limits' }).click();
    await detail.getByText('200,000 tokens/min · 20 at once', { exact: true }).waitFor();
    expect((await adminGet('/admin/owners/browser-team')).limits).toEqual({ requests_per_minute: null, tokens_per_minute: 200000, concurrent_requests: 20 });

    await form.getByLabel('Tokens per minute').fill('');
    await form.getByLabel('Calls at once').fill('');
    await form.getByRole('button', { name: 'Save rate limits' }).click();

    await detail.getByRole('definition').filter({ hasText: 'No rate limits' }).waitFor();
    expect((await adminGet('/admin/owners/browser-team')).limits).toBeNull();
  });

  it("sets a monthly budget period in a time zone with alerts on an owner's page, shown with the time it resets", async () => {
    const detail = await openOwner('browser-team');
    const form = detail.getByRole('form', { name: 'Budget of browser-team' });
    await form.getByLabel('Budget period').selectOption('month');
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await form.getByLabel('Alerts (% of the budget)').fill('80, 50, 100');
    await form.getByRole('button', { name: 'Save budget' }).click();

    await page.getByText('The budget of browser-team is now 12.50, starting again each month (Europe/Berlin).').waitFor();
    const stored = await adminGet('/admin/owners/browser-team');
    expect(stored).toMatchObject({ budget: 12.5, budget_period: 'month', budget_timezone: 'Europe/Berlin', alerts: [50, 80, 100] });
    expect(stored.current_period).toMatchObject({ period: 'month', spent_nano: stored.spent_nano });
    // A Berlin month starts at 22:00 or 23:00 UTC on the day before.
    expect(new Date(stored.current_period.resets_at).getUTCHours()).toBeGreaterThanOrEqual(22);
    await detail.getByText(`resets ${stored.current_period.resets_at.slice(0, 19).replace('T', ' ')} UTC`).waitFor();
    expect(await detail.getByRole('definition').filter({ hasText: 'Monthly, Europe/Berlin' }).count()).toBe(1);
    expect(await detail.getByRole('definition').filter({ hasText: 'At 50%, 80%, 100% of the budget' }).count()).toBe(1);
    expect(await form.getByLabel('Alerts (% of the budget)').inputValue()).toBe('50, 80, 100');
    const row = page.getByRole('region', { name: 'Quota owners' }).getByRole('row', { name: /^browser-team/ });
    expect(await row.textContent()).toContain('Monthly, Europe/Berlin');
    // Only the terms changed: the budget, given again unchanged, is not in the audit log.
    expect((await adminGet('/admin/audit?action=owner.budget&item_id=browser-team')).data).toHaveLength(1);
  });

  it('shows a refused time zone at its field, marked invalid, and stores nothing', async () => {
    const detail = await openOwner('browser-team');
    const form = detail.getByRole('form', { name: 'Budget of browser-team' });
    const field = form.getByLabel('Time zone');
    await field.fill('Mars/Olympus_Mons');
    await form.getByLabel('Alerts (% of the budget)').fill('90');
    await form.getByRole('button', { name: 'Save budget' }).click();

    await expectProblemAt(field, 'budget_timezone: must be an IANA time zone name such as Europe/Berlin or UTC', '/admin/owners/browser-team');
    expect(await form.getByLabel('Alerts (% of the budget)').getAttribute('aria-invalid')).toBeNull();
    expect(await adminGet('/admin/owners/browser-team')).toMatchObject({ budget_timezone: 'Europe/Berlin', alerts: [50, 80, 100] });
  });

  it("creates an owner with a weekly budget period and alerts, whose fired alerts show on the owner's page", async () => {
    await open(page, 'Owners');
    await page.getByText('Create an owner').click();
    const form = page.getByRole('form', { name: 'Create an owner' });
    await form.getByLabel('Owner id').fill('alerted-team');
    await form.getByLabel('Budget (optional)').fill('0.00001');
    await form.getByLabel('Budget period').selectOption('week');
    await form.getByLabel('Alerts (% of the budget)').fill('50 100');
    await photograph('owner-create', form.getByLabel('Budget period'));
    await form.getByRole('button', { name: 'Create owner' }).click();
    await page.getByText('Owner alerted-team created.').waitFor();
    expect(await adminGet('/admin/owners/alerted-team')).toMatchObject({ budget_period: 'week', budget_timezone: null, alerts: [50, 100] });

    const key = await fetch(`${gateway.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ owner: 'alerted-team', models: ['chat-model'] }),
    }).then((answer) => answer.json() as Promise<{ key: string }>);
    expect(await chatWith(key.key, 'Past every threshold at once')).toMatchObject({ choices: [expect.anything()] });
    const deadline = Date.now() + 10_000;
    while ((await adminGet('/admin/alerts?owner_id=alerted-team')).data.length < 2 && Date.now() < deadline) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
    }
    const detail = await openOwner('alerted-team');
    const alerts = detail.getByRole('region', { name: 'Budget alerts of alerted-team' });
    for (const threshold of ['50%', '100%']) await alerts.getByRole('row', { name: new RegExp(`^${threshold}`) }).waitFor();
    expect(await alerts.textContent()).toContain('Not yet');
    await photograph('owner-alerts', alerts);
  });

  it('creates a key with a tiny budget of its own, whose second call is answered 402, its spend shown in its row', async () => {
    const stored = await createChatKey(budgeted, (form) => form.getByLabel('Budget (optional)').fill('0.0000001'));

    expect(stored).toMatchObject({ budget: 0.0000001, budget_nano: '100', spend: { period: 'month', spent_nano: '0' } });
    const first = await chatWith(budgeted.key, 'A tenth of a micro-unit');
    const second = await chatWith(budgeted.key, 'One more');
    expect(first).toMatchObject({ choices: [expect.objectContaining({ message: expect.objectContaining({ content: expect.any(String) }) })] });
    expect(second).toBeInstanceOf(OpenAI.APIError);
    expect(second).toMatchObject({ status: 402 });

    const deadline = Date.now() + 10_000;
    let spend = (await adminGet(`/admin/keys/${budgeted.id}`)).spend;
    while (spend.spent_nano === '0' && Date.now() < deadline) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      spend = (await adminGet(`/admin/keys/${budgeted.id}`)).spend;
    }
    expect(BigInt(spend.spent_nano)).toBeGreaterThan(100n);
    // Another filter reads the list again.
    await page.goto(`${gateway.url}/console/#/keys?owner=browser-team`);
    const row = page.getByRole('row', { name: new RegExp(`^${budgeted.prefix}`) });
    await row.getByText(`${amountText(spend.spent_nano)} spent this month`).waitFor();
    expect(await row.textContent()).toContain('0.0000001');
  });

  it("clears a key's budget from its row, after which it is answered again", async () => {
    await page.getByRole('button', { name: `Budget of key ${budgeted.prefix}` }).click();
    const form = page.getByRole('form', { name: `Budget of key ${budgeted.prefix}` });
    const field = form.getByLabel(`New budget of key ${budgeted.prefix}`);
    // The form opens with the key's budget, its field focused.
    expect(await field.inputValue()).toBe('0.0000001');
    await expectFocused(page, field);
    expect(await form.textContent()).toContain('Counted in the period of browser-team (Monthly, Europe/Berlin)');
    await photograph('key-budget', form);
    await field.fill('');
    await form.getByRole('button', { name: 'Save budget' }).click();

    await page.getByText(`Key ${budgeted.prefix} has no budget of its own now.`).waitFor();
    expect((await adminGet(`/admin/keys/${budgeted.id}`)).budget).toBeNull();
    // The list is read again after the notice shows.
    await page
      .getByRole('row', { name: new RegExp(`^${budgeted.prefix}`) })
      .filter({ hasNotText: '0.0000001' })
      .waitFor();
    expect(await chatWith(budgeted.key, 'Free again')).toMatchObject({ choices: [expect.anything()] });
  });

  it("renews a member's key, and deletes a key once confirmed", async () => {
    const created = await fetch(`${gateway.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ owner: 'alice', models: ['chat-model'] }),
    }).then((answer) => answer.json() as Promise<{ id: string; prefix: string }>);
    await page.goto(`${gateway.url}/console/#/keys?owner=alice`);
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();

    await page.getByRole('button', { name: `Renew key ${created.prefix}` }).click();
    const renew = page.getByRole('form', { name: `Renew key ${created.prefix}` });
    await renew.getByLabel('New expiry (your local time)').fill('2027-06-30T12:00');
    await renew.getByRole('button', { name: 'Renew key' }).click();
    await page.getByText(`Key ${created.prefix} renewed.`).waitFor();
    expect((await adminGet(`/admin/keys/${created.id}`)).expires_at).toMatch(/^2027-06-30T/);

    await page.getByRole('button', { name: `Delete key ${created.prefix}` }).click();
    await page
      .getByRole('group', { name: `Delete key ${created.prefix}` })
      .getByRole('button', { name: 'Yes, delete the key' })
      .click();
    await page.getByRole('button', { name: `Delete key ${created.prefix}` }).waitFor({ state: 'detached' });
    expect((await adminGet(`/admin/keys/${created.id}`)).error.code).toBe('not_found');
  });

  it('shows a refused field next to the field, and a stale edit as a change made by someone else', async () => {
    await open(page, 'Models and lines');
    await page.getByText('Add a line').first().click();
    const add = page.getByRole('form', { name: 'Add a line' });
    await add.getByLabel('Line id').fill('browser-line');
    await add.getByLabel('Base URL').fill(made.simulatorUrl);
    await add.getByLabel('Vendor key').fill('sk-a-literal-key');
    await add.getByRole('button', { name: 'Add line' }).click();

    await add
      .getByText(/needs GATEWAY_SECRET_KEY/)
      .first()
      .waitFor();
    // The field is marked as the page re-renders with the refusal.
    await until(async () => (await add.getByLabel('Vendor key').getAttribute('aria-invalid')) === 'true', 'the vendor key field to be marked');
    expect(await add.getByLabel('Vendor key').getAttribute('aria-invalid')).toBe('true');
    expectRefusalLogged(400, '/admin/upstreams');
    await add.getByLabel('Vendor key').fill('${TEST_VENDOR_KEY}');
    await add.getByRole('button', { name: 'Add line' }).click();
    await page.getByText('Line browser-line added.').waitFor();

    const edit = await openEdit(page, 'line', 'browser-line');
    await edit.getByLabel('Timeout (ms)').waitFor();
    const behindItsBack = await fetch(`${gateway.url}/admin/upstreams/browser-line`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1, timeout_ms: 5000 }),
    });
    expect(behindItsBack.status).toBe(200);
    await edit.getByLabel('Timeout (ms)').fill('7000');
    await edit.getByRole('button', { name: 'Save line' }).click();

    await edit.getByText('Someone else changed this item since you opened it.').waitFor();
    expectRefusalLogged(409, '/admin/upstreams/browser-line');
    await edit.getByRole('button', { name: 'Reload the item' }).click();
    // The form shows the values read again.
    expect(await waitForValue(edit.getByLabel('Timeout (ms)'), '5000')).toBe('5000');
    expect((await adminGet('/admin/upstreams/browser-line')).timeout_ms).toBe(5000);
  });

  it('filters calls by owner and status class', async () => {
    await open(page, 'Calls');
    const filters = page.getByRole('form', { name: 'Filter calls' });
    await filters.getByLabel('Owner').selectOption('browser-team');
    await filters.getByLabel('Status').fill('2xx');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: `Show call ${made.requestId}` }).waitFor();

    await filters.getByLabel('Status').fill('5xx');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No calls match these filters.').waitFor();
  });

  it("filters calls by tag and end user, and shows a call's tags and end user in its detail", async () => {
    const { response } = await client(KEYS.all)
      .chat.completions.create(
        { model: 'chat-model', messages: [{ role: 'user', content: 'Bill me to search' }], user: 'browser-user-1' },
        { headers: { 'X-Gateway-Tags': 'app:search,env:console' } },
      )
      .withResponse();
    const requestId = response.headers.get('x-request-id') ?? '';

    await open(page, 'Calls');
    const filters = page.getByRole('form', { name: 'Filter calls' });
    await filters.getByLabel('Tag').fill('env:console');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: `Show call ${requestId}` }).click();
    const detail = page.getByRole('region', { name: `Call ${requestId}` });
    await detail.getByRole('link', { name: 'app:search' }).waitFor();
    await detail.getByRole('link', { name: 'browser-user-1' }).click();
    // The link fills the filter as the page re-renders.
    await until(async () => (await filters.getByLabel('End user').inputValue()) === 'browser-user-1', 'the end-user filter to be filled');
    expect(await filters.getByLabel('End user').inputValue()).toBe('browser-user-1');
    await page.getByRole('button', { name: `Show call ${requestId}` }).waitFor();

    await filters.getByLabel('End user').fill('nobody-at-all');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No calls match these filters.').waitFor();
  });

  it('shows the attempts of a call that failed over, with the lines it tried', async () => {
    const { response } = await client(KEYS.all)
      .chat.completions.create({ model: 'failover-model', messages: [{ role: 'user', content: 'Past the dead line' }] })
      .withResponse();
    const requestId = response.headers.get('x-request-id') ?? '';
    expect((await adminGet(`/admin/usage/${requestId}`)).lines_tried).toEqual(['line-dead', 'line-b']);

    await open(page, 'Calls');
    await page.getByLabel('Request id').fill(requestId);
    await page.getByRole('button', { name: 'Look up' }).click();
    const detail = page.getByRole('region', { name: `Call ${requestId}` });
    const value = (name: string) => detail.locator('dt', { hasText: new RegExp(`^${name}$`) }).locator('xpath=following-sibling::dd');
    await value('Attempts').waitFor();

    expect(await value('Attempts').textContent()).toBe('2');
    // An arrow for the eye, "then" for a screen reader.
    expect(await value('Lines tried').textContent()).toBe('line-dead → , then line-b');
    await photograph('call-attempts', value('Lines tried'));
  });

  it('lists an open video task with its reservation', async () => {
    const submitted = await fetch(`${gateway.url}/vendor-c/v2/video_generation`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'video-model', duration: 4, content: [{ type: 'text', text: 'A kite over the dunes' }] }),
    }).then((answer) => answer.json() as Promise<{ task_id: string }>);
    await open(page, 'Video tasks');
    const filters = page.getByRole('form', { name: 'Filter video tasks' });
    await filters.getByLabel('State').selectOption({ label: 'Open (reserved)' });
    await filters.getByRole('button', { name: 'Apply filters' }).click();

    const row = page.getByRole('row', { name: new RegExp(submitted.task_id) });
    await row.waitFor();
    expect(await row.textContent()).toContain('0.2');
  });

  it('shows in the audit log who made the changes, with the item after the change', async () => {
    await open(page, 'Audit log');

    const row = page.getByRole('row', { name: /owner\.create/ }).filter({ hasText: 'keyboard-team' });
    await row.waitFor();
    expect(await row.textContent()).toContain('alice');
    for (const action of ['owner.limits', 'key.limits', 'owner.budget_terms', 'key.budget', 'owner.alert'])
      expect(await page.getByRole('row', { name: new RegExp(action.replace('.', '\\.')) }).count()).toBeGreaterThan(0);
  });

  it('passes an accessibility check on every page at 1280 and 390 px, each photographed', async () => {
    const phone = await browser.newContext({ viewport: WIDTHS.phone, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
    const phonePage = watch(await phone.newPage());
    await signIn(phonePage);
    const problems: Record<string, string[]> = {};
    for (const [width, onPage] of [
      ['desktop', page],
      ['phone', phonePage],
    ] as const) {
      for (const [name, route] of Object.entries(PAGES)) {
        await onPage.goto(`${gateway.url}/console/#/${route}`);
        await onPage.locator('h1').first().waitFor();
        // Detached once no element matches: nothing is loading any more.
        await onPage.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
        const found = await accessibilityProblems(onPage);
        if (found.length > 0) problems[`${name} at ${width}`] = found;
        await onPage.screenshot({ path: join(SHOTS, `${name}-${WIDTHS[width].width}.png`), fullPage: true });
        // Nothing wider than the screen: tables scroll inside their own box.
        expect({ name, width, overflow: await onPage.evaluate('document.documentElement.scrollWidth - window.innerWidth') }).toEqual({
          name,
          width,
          overflow: 0,
        });
      }
    }
    await phone.close();

    expect(problems).toEqual({});
  });

  it('signs out, after which the API refuses the old cookie', async () => {
    const [cookie] = await context.cookies(gateway.url + '/admin');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();

    const answer = await fetch(`${gateway.url}/admin/owners`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` } });
    expect(answer.status).toBe(401);
  });

  it('logged no error in the browser console', () => {
    expect(browserErrors).toEqual([]);
  });
});
