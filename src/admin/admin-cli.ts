import { GatewayError } from '../common/gateway-error';
import { AdminStore } from './admin-store';
import { validated } from './admin-validation';
import { CreateKeyBody, CreateOwnerBody, DailyQuery, MAX_PAGE, UsageListQuery } from './admin.dto';
import { amountOf, expiryOf, keyScope, unknownModels } from './admin-values';
import type { UsageReads } from './usage-reads';

/** What the command's usage look-ups need of UsageReads. */
export type UsageLookups = Pick<UsageReads, 'usageRecord' | 'usageRecords' | 'dailyTotals'>;
import { keyView, ownerView } from './admin.views';

export const ADMIN_CLI_USAGE = `Usage: gateway-admin <command> [arguments]
       npm run admin -- <command> [arguments]     (a source checkout, after npm run build)

Owners
  owners create --id <id> --kind project|member [--budget <amount>]
  owners list
  owners show <id>
  owners set-budget <id> --budget <amount>|unlimited
  owners renew-keys <project id> --expires <date>|never      (project keys are renewed by the project)
Keys
  keys create --owner <id> --models <model,model,...|*> [--expires <date>]
  keys list [--owner <id>]
  keys show <key id>
  keys disable <key id>
  keys enable <key id>
  keys renew <key id> --expires <date>|never                  (a member's key)
  keys delete <key id>
Usage records (the admin API's answers: GET /admin/usage/<request id>, /admin/usage, /admin/usage/daily)
  usage show <request id>                                     (the X-Request-Id of a call)
  usage list [--owner <id>] [--key <key id>] [--model <id>] [--interface <name>]
             [--status <429|4xx>] [--from <time>] [--to <time>] [--limit <1-1000>] [--after <next>]
  usage daily --from <day> --to <day> [--owner <id>] [--model <id>] [--group-by model|owner]

The database is the gateway's: DATABASE_URL, else the embedded one under DATA_DIR (./data).
With DATABASE_URL the command works beside a running gateway; the embedded database opens
in one process at a time, so use it while the gateway is stopped (else the admin API).
A call still queued in a running gateway is not yet in the database: the admin API sees it.
With GATEWAY_CONFIG set, the models of a new key are checked against its catalog.
Dates: 2027-01-01 (midnight UTC) or 2027-01-01T12:00:00Z; days: 2027-01-01. Output: JSON on stdout.`;

/** Wrong use of the command line (exit status 2), as opposed to a refused operation (1). */
export class UsageError extends Error {}

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

/** The admin API's usage reads, shared so that the command and the API answer alike. */

/** The database side of a command: opened only once the arguments have passed. */
export interface AdminDatabase {
  store: AdminStore;
  usage: UsageLookups;
}

export interface AdminCommandContext {
  /** Opens the database; a command calls it after its arguments passed, so wrong use never waits for it. */
  database(): Promise<AdminDatabase>;
  /** The model ids of the configuration file (GATEWAY_CONFIG), checked with the database's catalog for a new key. */
  knownModels?: ReadonlySet<string>;
}

/** The given flags as the admin API's query string names them (`--group-by` is `group_by`). */
function queryOf(parsed: Parsed): Record<string, string> {
  if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
  return Object.fromEntries([...parsed.flags].map(([flag, value]) => [flag.replaceAll('-', '_'), value]));
}

/**
 * Runs one command of the admin command line and returns what to print.
 * Inputs go through the admin API's own validation, so both refuse the same things alike.
 */
export async function runAdminCommand({ database, knownModels }: AdminCommandContext, argv: string[]): Promise<unknown> {
  const [group, command, ...rest] = argv;
  const id = () => one(parse(rest, []), group === 'keys' ? 'key id' : 'owner id');
  // Each case reads and checks all of its arguments before it opens the database.
  switch (`${group} ${command}`) {
    case 'owners create': {
      const parsed = parse(rest, ['id', 'kind', 'budget']);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const body = validated(CreateOwnerBody, { id: required(parsed, 'id'), kind: required(parsed, 'kind'), budget: parsed.flags.get('budget') }, 'command');
      const owner = { id: body.id, kind: body.kind, budgetNano: amountOf(body.budget, 'budget') };
      return ownerView(await (await database()).store.createOwner(owner));
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
      return ownerView(await (await database()).store.setBudget(owner, budgetNano));
    }
    case 'owners renew-keys': {
      const parsed = parse(rest, ['expires']);
      const owner = one(parsed, 'owner id');
      const expiresAt = expiryFlag(required(parsed, 'expires'));
      return (await (await database()).store.renewProjectKeys(owner, expiresAt)).map(keyView);
    }
    case 'keys create': {
      const parsed = parse(rest, ['owner', 'models', 'expires']);
      if (parsed.positional.length > 0) throw new UsageError(`unexpected argument ${parsed.positional[0]}`);
      const models = required(parsed, 'models')
        .split(',')
        .map((model) => model.trim())
        .filter((model) => model !== '');
      const body = validated(CreateKeyBody, { owner: required(parsed, 'owner'), models, expires_at: parsed.flags.get('expires') }, 'command');
      const key = { ownerId: body.owner, models: keyScope(body.models), expiresAt: expiryOf(body.expires_at, 'expires') };
      const { store } = await database();
      // The database's catalog (the file's models once a gateway started on it, and those added since), with the file's.
      const known = new Set([...(knownModels ?? []), ...(await store.catalogModelIds())]);
      const unknown = known.size > 0 ? unknownModels(body.models, (model) => known.has(model)) : [];
      if (unknown.length > 0) throw new GatewayError('invalid_request', `models: ${unknown.join(', ')} not in the catalog`);
      const created = await store.createKey(key);
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
      return keyView(await (await database()).store.setEnabled(key, command === 'enable'));
    }
    case 'keys renew': {
      const parsed = parse(rest, ['expires']);
      const key = one(parsed, 'key id');
      const expiresAt = expiryFlag(required(parsed, 'expires'));
      return keyView(await (await database()).store.renewKey(key, expiresAt));
    }
    case 'keys delete': {
      const key = id();
      return keyView(await (await database()).store.deleteKey(key));
    }
    case 'usage show': {
      const requestId = one(parse(rest, []), 'request id');
      return (await database()).usage.usageRecord(requestId);
    }
    case 'usage list': {
      const parsed = parse(rest, ['owner', 'key', 'model', 'interface', 'status', 'from', 'to', 'limit', 'after']);
      const query = validated(UsageListQuery, queryOf(parsed), 'command');
      return (await database()).usage.usageRecords(query);
    }
    case 'usage daily': {
      const parsed = parse(rest, ['from', 'to', 'owner', 'model', 'group-by']);
      required(parsed, 'from');
      required(parsed, 'to');
      const query = validated(DailyQuery, queryOf(parsed), 'command');
      return (await database()).usage.dailyTotals(query);
    }
    default:
      throw new UsageError(group === undefined ? 'no command given' : `unknown command: ${argv.slice(0, 2).join(' ')}`);
  }
}

function expiryFlag(value: string): Date | null {
  return value === 'never' ? null : expiryOf(value, 'expires');
}
