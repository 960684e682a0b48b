import { GatewayError } from '../common/gateway-error';
import type { CatalogKind } from '../catalog/catalog-store';
import { AdminStore } from './admin-store';
import type { AdminChanges } from './admin-changes';
import { type CatalogAdminService, versionText } from './catalog-admin.service';
import { auditFilterOf, AuditLog } from './audit-log';
import { validated } from './admin-validation';
import { AuditQuery, CreateKeyBody, CreateOwnerBody, DailyQuery, MAX_PAGE, SpendAuditQuery, UsageListQuery } from './admin.dto';
import { amountOf, changesTerms, expiryOf, keyScope, limitsOf, termsOf, unknownModels } from './admin-values';
import type { UsageReads } from './usage-reads';
import { type SpendAudit, spendAuditRange } from './spend-audit';
import { keyView, ownerView } from './admin.views';

/** What the command's usage look-ups need of UsageReads. */
export type UsageLookups = Pick<UsageReads, 'usageRecord' | 'usageRecords' | 'dailyTotals'>;

export const ADMIN_CLI_USAGE = `Usage: gateway-admin <command> [arguments]
       npm run admin -- <command> [arguments]     (a source checkout, after npm run build)

Owners
  owners create --id <id> --kind project|member [--budget <amount>]
                [--budget-period day|week|month] [--budget-timezone <IANA zone>] [--alerts <per cent,...>]
                [--requests-per-minute <n>] [--tokens-per-minute <n>] [--concurrent-requests <n>]
  owners list
  owners show <id>
  owners set-budget <id> --budget <amount>|unlimited
  owners set-period <id> [--budget-period day|week|month|none] [--budget-timezone <zone>|none]
                         [--alerts <per cent,...>|none]      (the ones given change, the others stay)
  owners set-limits <id> [--requests-per-minute <n>|none] [--tokens-per-minute <n>|none]
                         [--concurrent-requests <n>|none]     (the limits given change, the others stay)
  owners renew-keys <project id> --expires <date>|never      (project keys are renewed by the project)
Keys
  keys create --owner <id> --models <model,model,...|*> [--expires <date>] [--budget <amount>]
              [limits as for owners]
  keys list [--owner <id>]
  keys show <key id>
  keys disable <key id>
  keys enable <key id>
  keys renew <key id> --expires <date>|never                  (a member's key)
  keys set-limits <key id> [--requests-per-minute <n>|none] [--tokens-per-minute <n>|none]
                           [--concurrent-requests <n>|none]
  keys set-budget <key id> --budget <amount>|none            (in its owner's period, inside its budget)
  keys delete <key id>
Catalog (the admin API's: bodies are the JSON form of a configuration-file item)
  upstreams list
  upstreams show <id>
  upstreams create --json '<item>'                          (api_key: a \${VAR} reference, or a literal
                                                             stored encrypted: needs GATEWAY_SECRET_KEY)
  upstreams update <id> --version <n> --json '<fields>'     (the given fields replace the stored ones)
  upstreams delete <id> [--version <n>]
  models list
  models show <id>
  models create --json '<item>'
  models update <id> --version <n> --json '<fields>'
  models delete <id> [--version <n>]
Audit log (GET /admin/audit)
  audit [--actor <name>] [--action <action>] [--item-kind <kind>] [--item-id <id>]
        [--from <time>] [--to <time>] [--limit <1-1000>] [--after <next>]
Usage records (the admin API's answers: GET /admin/usage/<request id>, /admin/usage, /admin/usage/daily,
/admin/usage/verify)
  usage show <request id>                                     (the X-Request-Id of a call)
  usage list [--owner <id>] [--key <key id>] [--model <id>] [--interface <name>]
             [--status <429|4xx>] [--from <time>] [--to <time>] [--limit <1-1000>] [--after <next>]
             [--tag <tag,tag,...>] [--end-user <id>]         (--tag: records carrying every tag given)
  usage daily --from <day> --to <day> [--owner <id>] [--model <id>] [--group-by model|owner|tag]
  usage verify [--owner <id>] [--from <time>] [--to <time>]  (spend audit: exit status 1 when anything
                                                             differs; takes the gateway's USAGE_RETENTION_DAYS)

The database is the gateway's: DATABASE_URL, else the embedded one under DATA_DIR (./data).
With DATABASE_URL the command works beside a running gateway; the embedded database opens
in one process at a time, so use it while the gateway is stopped (else the admin API).
A call still queued in a running gateway is not yet in the database: the admin API sees it.
The models of a new key are checked against the stored catalog, with GATEWAY_CONFIG's too.
Changes are written to the audit log as "command line (<user>)"; replicas load catalog changes
within CATALOG_CHECK_MS (at once on PostgreSQL).
Dates: 2027-01-01 (midnight UTC) or 2027-01-01T12:00:00Z; days: 2027-01-01. Output: JSON on stdout.`;

/** Wrong use of the command line (exit status 2), as opposed to a refused operation (1). */
export class UsageError extends Error {}

/** An answer printed like any other, after which the command exits with `status` (the spend audit's 1 when it found differences). */
export class AnswerWithStatus {
  constructor(
    readonly answer: unknown,
    readonly status: number,
  ) {}
}

interface Parsed {
  positional: string[];
  flags: Map<string, string>;
}

function parse(args: string[], allowed: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (!allowed.includes(name)) throw new UsageError(`unknown option --${name}`);
    const value = inline ?? args[++index];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags.set(name, value);
  }
  return { positional, flags };
}

function one(parsed: Parsed, what: string): string {
  if (parsed.positional.length !== 1) throw new UsageError(`expected one ${what}`);
  return parsed.positional[0];
}

function required(parsed: Parsed, flag: string): string {
  const value = parsed.flags.get(flag);
  if (value === undefined) throw new UsageError(`--${flag} is required`);
  return value;
}

async function allPages<Row>(page: (after: string | undefined) => Promise<{ rows: Row[]; next: string | null }>): Promise<Row[]> {
  const rows: Row[] = [];
  let after: string | undefined;
  do {
    const next = await page(after);
    rows.push(...next.rows);
    after = next.next ?? undefined;
  } while (after !== undefined);
  return rows;
}

/** The database side of a command: opened only once the arguments have passed. */
export interface AdminDatabase {
  store: AdminStore;
  catalog: Pick<CatalogAdminService, 'list' | 'show' | 'writeUpstream' | 'writeModel' | 'remove'>;
  audit: Pick<AuditLog, 'list'>;
  /** Every change goes through here, into the audit log. */
  changes: Pick<
    AdminChanges,
    | 'createOwner'
    | 'setBudget'
    | 'setTerms'
    | 'setOwnerLimits'
    | 'renewProjectKeys'
    | 'createKey'
    | 'setEnabled'
    | 'renewKey'
    | 'setKeyLimits'
    | 'setKeyBudget'
    | 'deleteKey'
  >;
  usage: UsageLookups;
  spend: Pick<SpendAudit, 'verify'>;
}

export interface AdminCommandContext {
  /** Who the audit log names for the command's changes. */
  actor: string;
  /** Opens the database; a command calls it after its arguments passed, so wrong use never waits for it. */
  database(): Promise<AdminDatabase>;
  /** The model ids of the configuration file (GATEWAY_CONFIG), checked with the database's catalog for a new key. */
  knownModels?: ReadonlySet<string>;
}

const LIMIT_FLAGS = ['requests-per-minute', 'tokens-per-minute', 'concurrent-requests'];

/** The limit flags given, as the admin API's `limits` names them (`none`: null, clearing it); undefined when none is given. */
function limitsFlags(parsed: Parsed): Record<string, unknown> | undefined {
  const given = LIMIT_FLAGS.filter((flag) => parsed.flags.has(flag));
  if (given.length === 0) return undefined;
  return Object.fromEntries(
    given.map((flag) => {
      const value = parsed.flags.get(flag)!;
      return [flag.replaceAll('-', '_'), value === 'none' ? null : /^\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

const TERM_FLAGS = ['budget-period', 'budget-timezone', 'alerts'];

/** The budget-term flags given, as the admin API names them (`none`: null; alerts a comma list). */
function termsFlags(parsed: Parsed): Record<string, unknown> {
  const terms: Record<string, unknown> = {};
  for (const flag of TERM_FLAGS) {
    const value = parsed.flags.get(flag);
    if (value === undefined) continue;
    const field = flag.replaceAll('-', '_');
    if (value === 'none') terms[field] = null;
    else if (flag === 'alerts') terms[field] = value.split(',').map((part) => (/^\s*\d+\s*$/.test(part) ? Number(part) : part));
    else terms[field] = value;
  }
  return terms;
}

/** The limit flags of a `set-limits` command, checked before the database opens: at least one. */
function givenLimits(parsed: Parsed): Record<string, unknown> {
  const limits = limitsFlags(parsed);
  if (!limits) throw new UsageError(`give at least one of ${LIMIT_FLAGS.map((flag) => `--${flag}`).join(', ')}`);
  limitsOf(limits);
  return limits;
}

/** The given flags as the admin API's query string names them (`--group-by` is `group_by`). */
function queryOf(parsed: Parsed): Record<string, string> {
  if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
  return Object.fromEntries([...parsed.flags].map(([flag, value]) => [flag.replaceAll('-', '_'), value]));
}

/** The usage list's query: `--tag a,b` is the API's `tag=a&tag=b` (a tag has no comma). */
function usageListQueryOf(parsed: Parsed): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = queryOf(parsed);
  if (typeof query.tag === 'string') query.tag = query.tag.split(',');
  return query;
}

/**
 * Runs one command of the admin command line and returns what to print (with the exit status
 * when it is not 0: AnswerWithStatus).
 * Inputs go through the admin API's own validation, so both refuse the same things alike.
 */
export async function runAdminCommand({ database, knownModels, actor }: AdminCommandContext, argv: string[]): Promise<unknown> {
  const [group, command, ...rest] = argv;
  const id = () => one(parse(rest, []), group === 'keys' ? 'key id' : 'owner id');
  // Each case reads and checks all of its arguments before it opens the database.
  if (group === 'audit') {
    const parsed = parse(argv.slice(1), ['actor', 'action', 'item-kind', 'item-id', 'from', 'to', 'limit', 'after']);
    const query = validated(AuditQuery, queryOf(parsed), 'command');
    return (await database()).audit.list(auditFilterOf(query, MAX_PAGE));
  }
  switch (`${group} ${command}`) {
    case 'owners create': {
      const parsed = parse(rest, ['id', 'kind', 'budget', ...TERM_FLAGS, ...LIMIT_FLAGS]);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const given = {
        id: required(parsed, 'id'),
        kind: required(parsed, 'kind'),
        budget: parsed.flags.get('budget'),
        limits: limitsFlags(parsed),
        ...termsFlags(parsed),
      };
      const body = validated(CreateOwnerBody, given, 'command');
      const owner = { id: body.id, kind: body.kind, budgetNano: amountOf(body.budget, 'budget'), limits: limitsOf(body.limits), terms: termsOf(body) };
      return ownerView(await (await database()).changes.createOwner(owner, actor));
    }
    case 'owners list': {
      const parsed = parse(rest, []);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const { store } = await database();
      return (await allPages((after) => store.owners(MAX_PAGE, after))).map(ownerView);
    }
    case 'owners show': {
      const owner = id();
      return ownerView(await (await database()).store.owner(owner));
    }
    case 'owners set-budget': {
      const parsed = parse(rest, ['budget']);
      const budget = required(parsed, 'budget');
      const owner = one(parsed, 'owner id');
      const budgetNano = budget === 'unlimited' ? null : amountOf(budget, 'budget');
      return ownerView(await (await database()).changes.setBudget(owner, budgetNano, actor));
    }
    case 'owners set-period': {
      const parsed = parse(rest, TERM_FLAGS);
      const owner = one(parsed, 'owner id');
      const terms = termsFlags(parsed);
      if (!changesTerms(terms)) throw new UsageError(`give at least one of ${TERM_FLAGS.map((flag) => `--${flag}`).join(', ')}`);
      termsOf(terms);
      return ownerView(await (await database()).changes.setTerms(owner, (current) => termsOf(terms, current), actor));
    }
    case 'owners set-limits': {
      const parsed = parse(rest, LIMIT_FLAGS);
      const owner = one(parsed, 'owner id');
      const limits = givenLimits(parsed);
      return ownerView(await (await database()).changes.setOwnerLimits(owner, (current) => limitsOf(limits, current), actor));
    }
    case 'owners renew-keys': {
      const parsed = parse(rest, ['expires']);
      const owner = one(parsed, 'owner id');
      const expiresAt = expiryFlag(required(parsed, 'expires'));
      return (await (await database()).changes.renewProjectKeys(owner, expiresAt, actor)).map(keyView);
    }
    case 'keys create': {
      const parsed = parse(rest, ['owner', 'models', 'expires', 'budget', ...LIMIT_FLAGS]);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const models = required(parsed, 'models')
        .split(',')
        .map((model) => model.trim())
        .filter((model) => model !== '');
      const given = {
        owner: required(parsed, 'owner'),
        models,
        expires_at: parsed.flags.get('expires'),
        limits: limitsFlags(parsed),
        budget: parsed.flags.get('budget'),
      };
      const body = validated(CreateKeyBody, given, 'command');
      const key = {
        ownerId: body.owner,
        models: keyScope(body.models),
        expiresAt: expiryOf(body.expires_at, 'expires'),
        limits: limitsOf(body.limits),
        budgetNano: amountOf(body.budget, 'budget'),
      };
      const { store, changes } = await database();
      // The database's catalog (the file's models once a gateway started on it, and those added since), with the file's.
      const known = new Set([...(knownModels ?? []), ...(await store.catalogModelIds())]);
      const unknown = known.size > 0 ? unknownModels(body.models, (model) => known.has(model)) : [];
      if (unknown.length > 0) throw new GatewayError('invalid_request', `models: ${unknown.join(', ')} not in the catalog`);
      const created = await changes.createKey(key, actor);
      return { ...keyView(created.key), key: created.plaintext };
    }
    case 'keys list': {
      const parsed = parse(rest, ['owner']);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]} (did you mean --owner ${parsed.positional[0]}?)`);
      const { store } = await database();
      return (await allPages((after) => store.keys(parsed.flags.get('owner'), MAX_PAGE, after))).map(keyView);
    }
    case 'keys show': {
      const key = id();
      return keyView(await (await database()).store.key(key));
    }
    case 'keys disable':
    case 'keys enable': {
      const key = id();
      return keyView(await (await database()).changes.setEnabled(key, command === 'enable', actor));
    }
    case 'keys renew': {
      const parsed = parse(rest, ['expires']);
      const key = one(parsed, 'key id');
      const expiresAt = expiryFlag(required(parsed, 'expires'));
      return keyView(await (await database()).changes.renewKey(key, expiresAt, actor));
    }
    case 'keys set-limits': {
      const parsed = parse(rest, LIMIT_FLAGS);
      const key = one(parsed, 'key id');
      const limits = givenLimits(parsed);
      return keyView(await (await database()).changes.setKeyLimits(key, (current) => limitsOf(limits, current), actor));
    }
    case 'keys set-budget': {
      const parsed = parse(rest, ['budget']);
      const budget = required(parsed, 'budget');
      const key = one(parsed, 'key id');
      const budgetNano = budget === 'none' ? null : amountOf(budget, 'budget');
      return keyView(await (await database()).changes.setKeyBudget(key, budgetNano, actor));
    }
    case 'keys delete': {
      const key = id();
      return keyView(await (await database()).changes.deleteKey(key, actor));
    }
    case 'usage show': {
      const requestId = one(parse(rest, []), 'request id');
      return (await database()).usage.usageRecord(requestId);
    }
    case 'usage list': {
      const parsed = parse(rest, ['owner', 'key', 'model', 'interface', 'status', 'from', 'to', 'limit', 'after', 'tag', 'end-user']);
      const query = validated(UsageListQuery, usageListQueryOf(parsed), 'command');
      return (await database()).usage.usageRecords(query);
    }
    case 'usage daily': {
      const parsed = parse(rest, ['from', 'to', 'owner', 'model', 'group-by']);
      required(parsed, 'from');
      required(parsed, 'to');
      const query = validated(DailyQuery, queryOf(parsed), 'command');
      return (await database()).usage.dailyTotals(query);
    }
    case 'usage verify': {
      const parsed = parse(rest, ['owner', 'from', 'to']);
      const query = validated(SpendAuditQuery, queryOf(parsed), 'command');
      spendAuditRange(query);
      const audit = await (await database()).spend.verify(query);
      return new AnswerWithStatus(audit, audit.differences.length > 0 ? 1 : 0);
    }
    case 'upstreams list':
    case 'models list': {
      const parsed = parse(rest, []);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      return (await (await database()).catalog.list(catalogKind(group))).data;
    }
    case 'upstreams show':
    case 'models show': {
      const itemId = one(parse(rest, []), `${catalogKind(group)} id`);
      return (await database()).catalog.show(catalogKind(group), itemId);
    }
    case 'upstreams create':
    case 'models create': {
      const parsed = parse(rest, ['json']);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const item = jsonObjectOf(required(parsed, 'json'));
      const { catalog } = await database();
      return group === 'upstreams' ? catalog.writeUpstream('create', item, actor) : catalog.writeModel('create', item, actor);
    }
    case 'upstreams update':
    case 'models update': {
      const parsed = parse(rest, ['json', 'version']);
      const itemId = one(parsed, `${catalogKind(group)} id`);
      const fields = { ...jsonObjectOf(required(parsed, 'json')), version: versionText(required(parsed, 'version'), '--version') };
      const { catalog } = await database();
      return group === 'upstreams' ? catalog.writeUpstream('patch', fields, actor, itemId) : catalog.writeModel('patch', fields, actor, itemId);
    }
    case 'upstreams delete':
    case 'models delete': {
      const parsed = parse(rest, ['version']);
      const itemId = one(parsed, `${catalogKind(group)} id`);
      const version = parsed.flags.has('version') ? versionText(parsed.flags.get('version')!, '--version') : undefined;
      return (await database()).catalog.remove(catalogKind(group), itemId, version, actor);
    }
    default:
      throw new UsageError(group === undefined ? 'no command given' : `unknown command: ${argv.slice(0, 2).join(' ')}`);
  }
}

function catalogKind(group: string | undefined): CatalogKind {
  return group === 'upstreams' ? 'upstream' : 'model';
}

/** `--json`: a JSON object, as the admin API takes it for a body. */
function jsonObjectOf(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request', '--json: not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new GatewayError('invalid_request', '--json: must be a JSON object');
  return value as Record<string, unknown>;
}

function expiryFlag(value: string): Date | null {
  return value === 'never' ? null : expiryOf(value, 'expires');
}
