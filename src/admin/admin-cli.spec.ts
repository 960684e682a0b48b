import { GatewayError } from '../common/gateway-error';
import type { AdminStore, KeyRow, NewKey, NewOwner, OwnerRow } from './admin-store';
import type { RateLimits } from '../config/rate-limits';
import { BudgetTerms, NO_TERMS } from '../config/budgets';
import { ADMIN_CLI_USAGE, AdminDatabase, AnswerWithStatus, runAdminCommand, UsageError, UsageLookups } from './admin-cli';
import type { SpendAuditQuery } from './admin.dto';
import type { SpendAuditView } from './admin.views';

/**
 * Argument parsing of the admin command line. The store and the usage reads are recording
 * fakes: these specs are about what reaches them and what is refused before; the behaviour
 * against a real database is test/admin-cli.e2e-spec.ts.
 */

const AT = new Date('2026-11-01T00:00:00Z');

const AUDITED: SpendAuditView = {
  owner: null,
  from: null,
  to: null,
  records_checked: 3,
  records_without_prices: 0,
  owners_checked: 1,
  unlisted_differences: 0,
  differences: [],
};

function ownerRow(id: string, budgetNano: bigint | null = null): OwnerRow {
  return {
    id,
    kind: 'project',
    budgetNano,
    spentNano: 0n,
    reservedNano: 0n,
    limits: null,
    terms: NO_TERMS,
    period: null,
    source: 'admin',
    createdAt: AT,
    updatedAt: AT,
  };
}

function keyRow(id: string, expiresAt: Date | null = null): KeyRow {
  return {
    id,
    keySha256: 'f'.repeat(64),
    prefix: 'gk-abcde',
    ownerId: 'team-a',
    ownerKind: 'member',
    models: ['*'],
    enabled: true,
    expiresAt,
    limits: null,
    budgetNano: null,
    spend: { period: null, start: null, resetsAt: null, spentNano: 0n, reservedNano: 0n },
    source: 'admin',
    createdAt: AT,
    updatedAt: AT,
  };
}

/** Every store call, by method name, with its arguments; opening the database is the call `database`. */
function recordingStore(catalogModels: string[] = []) {
  const calls: Array<[string, ...unknown[]]> = [];
  const store = {
    catalogModelIds: async () => (calls.push(['catalogModelIds']), new Set(catalogModels)),
    createOwner: async (owner: NewOwner) => (calls.push(['createOwner', owner]), ownerRow(owner.id, owner.budgetNano)),
    owner: async (id: string) => (calls.push(['owner', id]), ownerRow(id)),
    owners: async (limit: number, after?: string) => (calls.push(['owners', limit, after]), { rows: [ownerRow('a')], next: null }),
    setBudget: async (id: string, budgetNano: bigint | null) => (calls.push(['setBudget', id, budgetNano]), ownerRow(id, budgetNano)),
    renewProjectKeys: async (id: string, expiresAt: Date | null) => (calls.push(['renewProjectKeys', id, expiresAt]), [keyRow('k1', expiresAt)]),
    createKey: async (key: NewKey) => (calls.push(['createKey', key]), { key: keyRow('k1', key.expiresAt), plaintext: 'gk-plaintext' }),
    key: async (id: string) => (calls.push(['key', id]), keyRow(id)),
    keys: async (owner: string | undefined, limit: number, after?: string) => (calls.push(['keys', owner, limit, after]), { rows: [keyRow('k1')], next: null }),
    setEnabled: async (id: string, enabled: boolean) => (calls.push(['setEnabled', id, enabled]), keyRow(id)),
    renewKey: async (id: string, expiresAt: Date | null) => (calls.push(['renewKey', id, expiresAt]), keyRow(id, expiresAt)),
    // A change of limits is given the stored limits (none here) and stores what it makes of them.
    setOwnerLimits: async (id: string, limits: (current: RateLimits | null) => RateLimits | null) => (
      calls.push(['setOwnerLimits', id, limits(null)]),
      ownerRow(id)
    ),
    setKeyLimits: async (id: string, limits: (current: RateLimits | null) => RateLimits | null) => (calls.push(['setKeyLimits', id, limits(null)]), keyRow(id)),
    deleteKey: async (id: string) => (calls.push(['deleteKey', id]), keyRow(id)),
    // A change of terms is given the stored terms (none here) and stores what it makes of them.
    setTerms: async (id: string, terms: (current: BudgetTerms) => BudgetTerms) => (calls.push(['setTerms', id, terms(NO_TERMS)]), ownerRow(id)),
    setKeyBudget: async (id: string, budgetNano: bigint | null) => (calls.push(['setKeyBudget', id, budgetNano]), keyRow(id)),
  };
  const usage: UsageLookups = {
    usageRecord: async (requestId: string) => (calls.push(['usageRecord', requestId]), { request_id: requestId }) as never,
    usageRecords: async (query) => (calls.push(['usageRecords', query]), { data: [], next: null }),
    dailyTotals: async (query) => (calls.push(['dailyTotals', query]), { data: [] }),
  };
  // Changes as the store sees them; the actor each was made by, apart.
  const actors: string[] = [];
  const by =
    <A extends unknown[], R>(change: (...args: A) => Promise<R>) =>
    (...args: [...A, string]) => {
      actors.push(args.pop() as string);
      return change(...(args as unknown as A));
    };
  const changes = {
    createOwner: by(store.createOwner),
    setBudget: by(store.setBudget),
    setOwnerLimits: by(store.setOwnerLimits),
    setKeyLimits: by(store.setKeyLimits),
    setTerms: by(store.setTerms),
    setKeyBudget: by(store.setKeyBudget),
    renewProjectKeys: by(store.renewProjectKeys),
    createKey: by(store.createKey),
    setEnabled: by(store.setEnabled),
    renewKey: by(store.renewKey),
    deleteKey: by(store.deleteKey),
  };
  const catalog = {
    list: async (kind: string) => (calls.push(['catalogList', kind]), { data: [] }),
    show: async (kind: string, id: string) => (calls.push(['catalogShow', kind, id]), { id }),
    writeUpstream: async (write: string, body: unknown, actor: string, id?: string) => (
      calls.push(['writeUpstream', write, body, id]),
      actors.push(actor),
      body
    ),
    writeModel: async (write: string, body: unknown, actor: string, id?: string) => (calls.push(['writeModel', write, body, id]), actors.push(actor), body),
    remove: async (kind: string, id: string, version: number | undefined, actor: string) => (
      calls.push(['remove', kind, id, version]),
      actors.push(actor),
      { id }
    ),
  };
  const audit = { list: async (filter: unknown) => (calls.push(['auditList', filter]), { data: [], next: null }) };
  // The spend audit finds a difference for the owner `drifted` only.
  const spend = {
    verify: async (query: SpendAuditQuery): Promise<SpendAuditView> => {
      calls.push(['verify', query]);
      const differences =
        query.owner === 'drifted'
          ? [{ kind: 'owner_spent' as const, owner_id: 'drifted', spent_nano: '2', records_nano: '1', difference_nano: '1', days: [] }]
          : [];
      return { ...AUDITED, owner: query.owner ?? null, differences };
    },
  };
  const database = async (): Promise<AdminDatabase> => (
    calls.push(['database']),
    {
      store: store as unknown as AdminStore,
      changes: changes as unknown as AdminDatabase['changes'],
      catalog: catalog as unknown as AdminDatabase['catalog'],
      audit: audit as unknown as AdminDatabase['audit'],
      usage,
      spend,
    }
  );
  return { database, calls, actors };
}

async function run(argv: string[], knownModels?: ReadonlySet<string>, catalogModels: string[] = []) {
  const { database, calls, actors } = recordingStore(catalogModels);
  const output = await runAdminCommand({ database, knownModels, actor: 'command line (test)' }, argv);
  return { output, calls: calls.filter(([name]) => name !== 'database' && name !== 'catalogModelIds'), actors };
}

async function refusal(argv: string[], knownModels?: ReadonlySet<string>): Promise<Error> {
  const { database, calls } = recordingStore();
  const error = await runAdminCommand({ database, knownModels, actor: 'command line (test)' }, argv).then(
    () => new Error('no refusal'),
    (thrown: Error) => thrown,
  );
  expect(calls).toEqual([]);
  return error;
}

describe(runAdminCommand.name, () => {
  it('reads --flag value and --flag=value alike', async () => {
    const spaced = await run(['owners', 'create', '--id', 'team-x', '--kind', 'project', '--budget', '1.5']);
    const inline = await run(['owners', 'create', '--id=team-x', '--kind=project', '--budget=1.5']);

    expect(spaced.calls).toEqual([['createOwner', { id: 'team-x', kind: 'project', budgetNano: 1_500_000_000n, limits: null, terms: NO_TERMS }]]);
    expect(inline.calls).toEqual(spaced.calls);
  });

  it('takes rate limits on create and set-limits, "none" clearing one, and refuses a bad one before opening the database', async () => {
    const created = await run(['owners', 'create', '--id', 'team-x', '--kind', 'project', '--requests-per-minute', '600', '--concurrent-requests', '20']);
    const key = await run(['keys', 'create', '--owner', 'team-a', '--models', '*', '--tokens-per-minute', '50000']);
    const owner = await run(['owners', 'set-limits', 'team-x', '--requests-per-minute', '60', '--tokens-per-minute', 'none']);
    const keyLimits = await run(['keys', 'set-limits', 'k1', '--concurrent-requests=4']);

    expect(created.calls).toEqual([
      [
        'createOwner',
        {
          id: 'team-x',
          kind: 'project',
          budgetNano: null,
          limits: { requests_per_minute: 600, tokens_per_minute: null, concurrent_requests: 20 },
          terms: NO_TERMS,
        },
      ],
    ]);
    expect(key.calls).toEqual([
      ['createKey', expect.objectContaining({ limits: { requests_per_minute: null, tokens_per_minute: 50000, concurrent_requests: null } })],
    ]);
    expect(owner.calls).toEqual([['setOwnerLimits', 'team-x', { requests_per_minute: 60, tokens_per_minute: null, concurrent_requests: null }]]);
    expect(keyLimits.calls).toEqual([['setKeyLimits', 'k1', { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: 4 }]]);
    expect(keyLimits.actors).toEqual(['command line (test)']);
    expect((await refusal(['owners', 'set-limits', 'team-x', '--requests-per-minute', '0'])).message).toBe(
      'limits.requests_per_minute: must be a whole number from 1 to 1000000000000, or null',
    );
    expect((await refusal(['keys', 'set-limits', 'k1', '--tokens-per-minute', 'lots'])).message).toMatch(/^limits.tokens_per_minute: must be a whole number/);
    expect(await refusal(['keys', 'set-limits', 'k1'])).toEqual(
      new UsageError('give at least one of --requests-per-minute, --tokens-per-minute, --concurrent-requests'),
    );
  });

  it('takes budget periods, time zones and alerts on create and set-period, and key budgets, refusing bad ones before opening the database', async () => {
    const created = await run(['owners', 'create', '--id', 'team-x', '--kind', 'project', '--budget', '100', '--budget-period', 'month', '--alerts', '80,50']);
    const changed = await run(['owners', 'set-period', 'team-x', '--budget-period', 'week', '--budget-timezone', 'Asia/Tokyo']);
    const cleared = await run(['owners', 'set-period', 'team-x', '--budget-period', 'none', '--alerts', 'none']);
    const key = await run(['keys', 'create', '--owner', 'team-a', '--models', '*', '--budget', '2.5']);
    const keyBudget = await run(['keys', 'set-budget', 'k1', '--budget', '7']);
    const keyUnbudgeted = await run(['keys', 'set-budget', 'k1', '--budget', 'none']);

    expect(created.calls).toEqual([
      ['createOwner', expect.objectContaining({ budgetNano: 100_000_000_000n, terms: { period: 'month', timezone: null, alerts: [50, 80] } })],
    ]);
    expect(changed.calls).toEqual([['setTerms', 'team-x', { period: 'week', timezone: 'Asia/Tokyo', alerts: [] }]]);
    expect(cleared.calls).toEqual([['setTerms', 'team-x', NO_TERMS]]);
    expect(key.calls).toEqual([['createKey', expect.objectContaining({ budgetNano: 2_500_000_000n })]]);
    expect(keyBudget.calls).toEqual([['setKeyBudget', 'k1', 7_000_000_000n]]);
    expect(keyUnbudgeted.calls).toEqual([['setKeyBudget', 'k1', null]]);
    expect(keyBudget.actors).toEqual(['command line (test)']);
    expect((await refusal(['owners', 'set-period', 'team-x', '--budget-period', 'year'])).message).toBe('budget_period: must be one of day, week, month');
    expect((await refusal(['owners', 'set-period', 'team-x', '--alerts', '50,lots'])).message).toBe('alerts[1]: must be a whole per cent from 1 to 1000');
    expect(await refusal(['owners', 'set-period', 'team-x'])).toEqual(new UsageError('give at least one of --budget-period, --budget-timezone, --alerts'));
    expect((await refusal(['keys', 'set-budget', 'k1', '--budget', '-1'])).message).toBe('budget: must not be negative (got -1)');
  });

  it('keeps an = inside an inline value', async () => {
    const { calls } = await run(['keys', 'list', '--owner=a=b']);

    expect(calls).toEqual([['keys', 'a=b', 1000, undefined]]);
  });

  it('converts a budget exactly and takes "unlimited" as no budget', async () => {
    expect((await run(['owners', 'set-budget', 'team-x', '--budget', '12.345678901'])).calls).toEqual([['setBudget', 'team-x', 12_345_678_901n]]);
    expect((await run(['owners', 'set-budget', 'team-x', '--budget', 'unlimited'])).calls).toEqual([['setBudget', 'team-x', null]]);
  });

  it('splits --models on commas, trims, drops empty entries and repeats, and keeps "*" alone', async () => {
    const listed = await run(['keys', 'create', '--owner', 'team-a', '--models', ' chat-model , ,embed-model,chat-model']);
    const star = await run(['keys', 'create', '--owner', 'team-a', '--models', 'chat-model,*']);

    expect(listed.calls).toEqual([
      ['createKey', { ownerId: 'team-a', models: ['chat-model', 'embed-model'], expiresAt: null, limits: null, budgetNano: null }],
    ]);
    expect(star.calls).toEqual([['createKey', { ownerId: 'team-a', models: ['*'], expiresAt: null, limits: null, budgetNano: null }]]);
  });

  it('prints the new key once, with its stored view', async () => {
    const { output } = await run(['keys', 'create', '--owner', 'team-a', '--models', '*', '--expires', '2027-01-01']);

    expect(output).toMatchObject({ id: 'k1', prefix: 'gk-abcde', key: 'gk-plaintext', expires_at: '2027-01-01T00:00:00.000Z' });
  });

  it('takes "never" as no expiry when renewing, and a date as midnight UTC', async () => {
    expect((await run(['keys', 'renew', 'k1', '--expires', 'never'])).calls).toEqual([['renewKey', 'k1', null]]);
    expect((await run(['owners', 'renew-keys', 'team-a', '--expires', '2027-01-01'])).calls).toEqual([
      ['renewProjectKeys', 'team-a', new Date('2027-01-01T00:00:00Z')],
    ]);
  });

  it("checks the models of a new key against the file's models and the database's catalog together", async () => {
    const fromFile = new Set(['chat-model']);
    const create = (models: string) => ['keys', 'create', '--owner', 'team-a', '--models', models];

    expect((await run(create('chat-model,added-model,*'), fromFile, ['added-model'])).calls.map(([name]) => name)).toEqual(['createKey']);
    expect((await run(create('added-model'), undefined, ['added-model'])).calls.map(([name]) => name)).toEqual(['createKey']);
    const error = await run(create('chat-model,nope'), fromFile, ['added-model']).catch((thrown: Error) => thrown);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as Error).message).toBe('models: nope not in the catalog');
  });

  it('leaves the models unchecked when neither the file nor the database names any model', async () => {
    expect((await run(['keys', 'create', '--owner', 'team-a', '--models', 'anything'])).calls.map(([name]) => name)).toEqual(['createKey']);
  });

  it.each([
    [['owners', 'create', '--id', 'x', '--kind', 'project']],
    [['owners', 'set-budget', 'x', '--budget', '5']],
    [['owners', 'renew-keys', 'x', '--expires', 'never']],
    [['keys', 'create', '--owner', 'x', '--models', '*']],
    [['keys', 'disable', 'k1']],
    [['keys', 'enable', 'k1']],
    [['keys', 'renew', 'k1', '--expires', 'never']],
    [['keys', 'delete', 'k1']],
    [['models', 'create', '--json', '{}']],
    [['upstreams', 'update', 'line-a', '--version', '1', '--json', '{}']],
    [['models', 'delete', 'm']],
  ])('makes %j as a change the audit log names the command line for', async (argv) => {
    const { actors } = await run(argv);

    expect(actors).toEqual(['command line (test)']);
  });

  it.each([
    [['models', 'list'], [['catalogList', 'model']]],
    [['upstreams', 'show', 'line-a'], [['catalogShow', 'upstream', 'line-a']]],
    [['models', 'create', '--json', '{"id":"m","lines":["line-a"]}'], [['writeModel', 'create', { id: 'm', lines: ['line-a'] }, undefined]]],
    [['upstreams', 'update', 'line-a', '--version', '3', '--json', '{"timeout_ms":5}'], [['writeUpstream', 'patch', { timeout_ms: 5, version: 3 }, 'line-a']]],
    [['models', 'delete', 'm'], [['remove', 'model', 'm', undefined]]],
    [['upstreams', 'delete', 'line-a', '--version=2'], [['remove', 'upstream', 'line-a', 2]]],
    [
      ['audit', '--actor', 'alice', '--item-kind', 'key', '--limit', '5'],
      [['auditList', expect.objectContaining({ actor: 'alice', itemKind: 'key', limit: 5 })]],
    ],
    [['audit'], [['auditList', expect.objectContaining({ limit: 1000 })]]],
  ])('runs %j on the catalog and the audit log as the admin API does', async (argv, expected) => {
    expect((await run(argv)).calls).toEqual(expected);
  });

  it.each([
    ['a --json that is not JSON', ['models', 'create', '--json', '{id:'], '--json: not valid JSON'],
    ['a --json that is a list', ['models', 'create', '--json', '[]'], '--json: must be a JSON object'],
    ['a version in words', ['models', 'update', 'm', '--version', 'two', '--json', '{}'], '--version: must be a whole number'],
    ['an audit kind that is not one', ['audit', '--item-kind', 'car'], 'item_kind'],
  ])('refuses %s before opening the database', async (_label, argv, message) => {
    expect((await refusal(argv)).message).toContain(message);
  });

  it.each([
    ['an update without --version', ['models', 'update', 'm', '--json', '{}'], '--version is required'],
    ['a create without --json', ['upstreams', 'create'], '--json is required'],
    ['an audit argument without a flag', ['audit', 'alice'], 'unexpected argument alice'],
  ])('treats %s as wrong use', async (_label, argv, message) => {
    const error = await refusal(argv);

    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toContain(message);
  });

  it('looks a usage record up by its request id', async () => {
    const { output, calls } = await run(['usage', 'show', 'req-1']);

    expect(calls).toEqual([['usageRecord', 'req-1']]);
    expect(output).toEqual({ request_id: 'req-1' });
  });

  it("passes the usage list's flags as the admin API's query string, the limit as a number", async () => {
    const key = '0b6f2a4e-6c1e-4e0b-9f59-2d6f0b1c2a3d';
    const { output, calls } = await run([
      'usage',
      'list',
      '--owner',
      'team-a',
      '--key',
      key,
      '--model=chat-model',
      '--interface',
      'chat_completions',
      '--status',
      '4xx',
      '--from',
      '2026-11-01',
      '--to',
      '2026-12-01T00:00:00Z',
      '--limit',
      '20',
      '--after',
      'cursor',
    ]);

    expect(calls).toEqual([
      [
        'usageRecords',
        {
          owner: 'team-a',
          key,
          model: 'chat-model',
          interface: 'chat_completions',
          status: '4xx',
          from: '2026-11-01',
          to: '2026-12-01T00:00:00Z',
          limit: 20,
          after: 'cursor',
        },
      ],
    ]);
    expect(output).toEqual({ data: [], next: null });
  });

  it('passes --tag as the tag list (a comma between tags) and --end-user as end_user', async () => {
    const { calls } = await run(['usage', 'list', '--tag', 'app:search,env:prod', '--end-user', 'user-42']);
    expect(calls).toEqual([['usageRecords', { tag: ['app:search', 'env:prod'], end_user: 'user-42' }]]);
  });

  it('passes the daily range and filters, --group-by as group_by', async () => {
    const { output, calls } = await run([
      'usage',
      'daily',
      '--from',
      '2026-11-01',
      '--to=2026-11-30',
      '--owner',
      'team-a',
      '--model',
      'm',
      '--group-by',
      'owner',
    ]);

    expect(calls).toEqual([['dailyTotals', { from: '2026-11-01', to: '2026-11-30', owner: 'team-a', model: 'm', group_by: 'owner' }]]);
    expect(output).toEqual({ data: [] });
  });

  it('passes the spend audit its owner and range, and asks for exit status 1 only when it found differences', async () => {
    const clean = await run(['usage', 'verify', '--owner', 'team-a', '--from', '2026-11-01', '--to=2026-12-01T00:00:00Z']);
    const drifted = await run(['usage', 'verify', '--owner', 'drifted']);
    const everything = await run(['usage', 'verify']);

    expect(clean.calls).toEqual([['verify', { owner: 'team-a', from: '2026-11-01', to: '2026-12-01T00:00:00Z' }]]);
    expect(clean.output).toEqual(new AnswerWithStatus({ ...AUDITED, owner: 'team-a' }, 0));
    expect(drifted.output).toBeInstanceOf(AnswerWithStatus);
    expect(drifted.output).toMatchObject({ status: 1, answer: { owner: 'drifted', differences: [{ kind: 'owner_spent', owner_id: 'drifted' }] } });
    expect(everything.calls).toEqual([['verify', {}]]);
    expect(everything.output).toEqual(new AnswerWithStatus(AUDITED, 0));
  });

  it.each([
    ['no command', [], 'no command given'],
    ['an unknown group', ['frobnicate', 'now'], 'unknown command: frobnicate now'],
    ['an unknown command', ['keys', 'explode'], 'unknown command: keys explode'],
    ['a group without command', ['keys'], 'unknown command: keys'],
    ['an unknown option', ['keys', 'create', '--owner', 'a', '--model', 'x'], 'unknown option --model'],
    ['an option of another command', ['keys', 'show', 'k1', '--owner', 'a'], 'unknown option --owner'],
    ['an option without value', ['owners', 'create', '--id', 'x', '--kind'], '--kind needs a value'],
    ['a missing required option', ['owners', 'create', '--id', 'x'], '--kind is required'],
    ['a missing --models', ['keys', 'create', '--owner', 'a'], '--models is required'],
    ['a missing --expires', ['keys', 'renew', 'k1'], '--expires is required'],
    ['a missing --budget', ['owners', 'set-budget', 'team-a'], '--budget is required'],
    ['a stray argument to create', ['owners', 'create', 'team-x', '--id', 'x', '--kind', 'project'], 'unexpected argument team-x'],
    ['a stray argument to owners list', ['owners', 'list', 'team-a'], 'unexpected argument team-a'],
    ['an owner given without --owner to keys list', ['keys', 'list', 'team-a'], 'unexpected argument team-a'],
    ['no key id', ['keys', 'show'], 'expected one key id'],
    ['two key ids', ['keys', 'delete', 'k1', 'k2'], 'expected one key id'],
    ['no owner id', ['owners', 'show'], 'expected one owner id'],
    ['no owner id to renew-keys', ['owners', 'renew-keys', '--expires', 'never'], 'expected one owner id'],
    ['usage without command', ['usage'], 'unknown command: usage'],
    ['no request id', ['usage', 'show'], 'expected one request id'],
    ['two request ids', ['usage', 'show', 'r1', 'r2'], 'expected one request id'],
    ['an option of usage show', ['usage', 'show', 'r1', '--owner', 'a'], 'unknown option --owner'],
    ['a stray argument to usage list', ['usage', 'list', 'team-a'], 'unexpected argument team-a'],
    ['a daily option given to usage list', ['usage', 'list', '--group-by', 'owner'], 'unknown option --group-by'],
    ['a list option given to usage daily', ['usage', 'daily', '--from', '2026-11-01', '--to', '2026-11-30', '--status', '4xx'], 'unknown option --status'],
    [
      'the query string name of --group-by',
      ['usage', 'daily', '--from', '2026-11-01', '--to', '2026-11-30', '--group_by', 'owner'],
      'unknown option --group_by',
    ],
    ['a missing --from to usage daily', ['usage', 'daily', '--to', '2026-11-30'], '--from is required'],
    ['a missing --to to usage daily', ['usage', 'daily', '--from', '2026-11-01'], '--to is required'],
    ['days given without flags', ['usage', 'daily', '--from', '2026-11-01', '--to', '2026-11-30', '2026-12-01'], 'unexpected argument 2026-12-01'],
    ['an owner given without --owner to usage verify', ['usage', 'verify', 'team-a'], 'unexpected argument team-a'],
    ['a list option given to usage verify', ['usage', 'verify', '--model', 'chat-model'], 'unknown option --model'],
  ])('treats %s as wrong use (UsageError) before opening the database', async (_label, argv, message) => {
    const error = await refusal(argv);

    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toContain(message);
  });

  it.each([
    ['a bad kind', ['owners', 'create', '--id', 'x', '--kind', 'team'], 'kind'],
    ['a bad owner id', ['owners', 'create', '--id', 'bad id', '--kind', 'project'], 'id'],
    ['a negative budget', ['owners', 'set-budget', 'x', '--budget', '-5'], 'budget'],
    ['a budget in words', ['owners', 'create', '--id', 'x', '--kind', 'project', '--budget', 'lots'], 'budget'],
    ['an empty model list', ['keys', 'create', '--owner', 'a', '--models', ' , '], 'models'],
    ['an empty owner', ['keys', 'create', '--owner=', '--models', '*'], 'owner'],
    ['a bad expiry on create', ['keys', 'create', '--owner', 'a', '--models', '*', '--expires', '2027-02-30'], 'expires'],
    ['a bad expiry on renew', ['keys', 'renew', 'k1', '--expires', 'tomorrow'], 'expires'],
    ['a time without zone', ['owners', 'renew-keys', 'p', '--expires', '2027-01-01T10:00:00'], 'expires'],
    ['a status that is neither a status nor a class', ['usage', 'list', '--status', '42'], 'status: must be a status'],
    ['a limit over the page size', ['usage', 'list', '--limit', '1001'], 'limit'],
    ['a limit in words', ['usage', 'list', '--limit', 'ten'], 'limit: must be a whole number'],
    ['a key that is not a key id', ['usage', 'list', '--key', 'gk-abcde'], 'key: must be a key id'],
    ['an empty owner filter', ['usage', 'list', '--owner='], 'owner'],
    ['a month for a day', ['usage', 'daily', '--from', '2026-11', '--to', '2026-11-30'], 'from: must be a date'],
    ['a tag with a space', ['usage', 'list', '--tag', 'app search'], 'tag: must be a tag'],
    ['an empty tag between commas', ['usage', 'list', '--tag', 'a,,b'], 'tag: must be a tag'],
    ['an unknown grouping', ['usage', 'daily', '--from', '2026-11-01', '--to', '2026-11-30', '--group-by', 'day'], 'group_by: must be model, owner or tag'],
    ['an audit from a time without zone', ['usage', 'verify', '--from', '2026-11-01T10:00:00'], 'from: must be an ISO 8601 date'],
    ['an audit that ends before it starts', ['usage', 'verify', '--from', '2026-11-02', '--to', '2026-11-01'], 'to: must not be before from'],
    ['an empty audit owner', ['usage', 'verify', '--owner='], 'owner'],
  ])('refuses %s as a bad value (GatewayError, exit 1) before opening the database', async (_label, argv, field) => {
    const error = await refusal(argv);

    expect(error).toBeInstanceOf(GatewayError);
    expect(error).not.toBeInstanceOf(UsageError);
    expect(error.message).toContain(field);
  });

  it('names every command in its usage text', () => {
    for (const command of [
      'owners create',
      'owners list',
      'owners show',
      'owners set-budget',
      'owners renew-keys',
      'keys create',
      'keys list',
      'keys show',
      'keys disable',
      'keys enable',
      'keys renew',
      'keys delete',
      'usage show',
      'usage list',
      'usage daily',
      'usage verify',
      '--group-by',
      'upstreams create',
      'upstreams update',
      'upstreams delete',
      'models list',
      'models create',
      'audit',
    ]) {
      expect(ADMIN_CLI_USAGE).toContain(command);
    }
  });
});
