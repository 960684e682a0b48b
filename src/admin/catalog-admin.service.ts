import { GatewayError } from '../common/gateway-error';
import { ItemSpec, modelSpecOf, upstreamSpecOf } from '../config/catalog-spec';
import { ItemResult, parseModelItem, parseUpstreamItem } from '../config/config.loader';
import type { CatalogKind, CatalogRow } from '../catalog/catalog-store';
import type { CatalogStore } from '../catalog/catalog-store';
import { lastFour, LineSecrets, referencedVariable, StoredVendorKey } from '../catalog/line-secrets';
import { AuditLog } from './audit-log';

/** What the catalog's changes need of the gateway (CatalogSync), or of the command line, which serves no catalog. */
export interface CatalogHolder {
  readonly store: CatalogStore;
  readonly secrets: LineSecrets;
  /** Loads the stored catalog into the process that serves it; nothing to do for the command line. */
  refresh(): Promise<void>;
  reload(): Promise<ReloadCounts>;
  readonly configFile?: string;
  /**
   * Where `${VAR}` references must be set: a replica's environment, whose value it will use.
   * Undefined for the command line, which does not use the key: the reference is taken unchecked.
   */
  readonly environment?: NodeJS.ProcessEnv;
}

export interface ReloadCounts {
  upstreams: number;
  models: number;
  owners: number;
  keys: number;
}

/** What the API shows of a line's vendor key: never the key. */
export interface VendorKeyView {
  set: boolean;
  last4: string | null;
  /** The `${VAR}` reference each replica resolves; null for a literal (stored encrypted) or the file's key. */
  reference: string | null;
}

type Body = Record<string, unknown>;
type Write = 'create' | 'replace' | 'patch';

/** The write counter a change must name: a whole number from 1. */
function versionOf(body: Body): number {
  const version = body.version;
  if (version === undefined) throw new GatewayError('invalid_request', 'version: is required (the version of the item you read; a stale one gets 409)');
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1)
    throw new GatewayError('invalid_request', 'version: must be a whole number from 1');
  return version;
}

/** A version given to a delete as `?version=`: checked when given. */
export function deleteVersionOf(text: string | undefined): number | undefined {
  return text === undefined ? undefined : versionText(text, 'version');
}

/** A version written as text (a query string, a command's flag): a whole number from 1 that the column holds. */
export function versionText(text: string, field: string): number {
  if (!/^[1-9]\d{0,8}$/.test(text)) throw new GatewayError('invalid_request', `${field}: must be a whole number from 1`);
  return Number(text);
}

/** The item's fields from a body: `version` apart, `id` from the path (a different one in the body is refused). */
function itemOf(body: Body, id: string | undefined): Body {
  const { version: _version, ...item } = body;
  if (id !== undefined) {
    if (item.id !== undefined && item.id !== id)
      throw new GatewayError('invalid_request', `id: must be ${JSON.stringify(id)}, the id in the path (an id cannot change)`);
    item.id = id;
  }
  return item;
}

function checked<T>(result: ItemResult<T>): T {
  if (result.problems) throw new GatewayError('invalid_request', result.problems.join('; '));
  return result.ok;
}

/**
 * The catalog's lines and models through the admin API (and the command line): bodies are the
 * JSON form of configuration-file items, checked by the file's rules; each change is stored,
 * counted, announced to the other replicas, and loaded on this one before the answer.
 */
export class CatalogAdminService {
  constructor(
    private readonly sync: CatalogHolder,
    private readonly audit: AuditLog,
  ) {}

  async list(kind: CatalogKind): Promise<{ data: Body[] }> {
    const contents = await this.sync.store.contents();
    const rows = kind === 'upstream' ? contents.upstreams : contents.models;
    return { data: rows.map((row) => this.view(kind, row)) };
  }

  async show(kind: CatalogKind, id: string): Promise<Body> {
    return this.view(kind, await this.sync.store.find(kind, id));
  }

  async writeUpstream(write: Write, body: Body, actor: string, id?: string): Promise<Body> {
    const store = this.sync.store;
    const version = write === 'create' ? undefined : versionOf(body);
    const current = write === 'create' ? undefined : await store.find('upstream', id!);
    const item = write === 'patch' ? { ...current!.spec, ...itemOf(body, id) } : itemOf(body, id);
    const given = item.api_key;
    if (write === 'create' && given === undefined) throw new GatewayError('invalid_request', 'api_key: is required');
    // The file's rules check the key as a non-empty string; it is kept apart from the stored form.
    const upstream = checked(parseUpstreamItem({ ...item, api_key: given ?? 'kept' }));
    const spec = upstreamSpecOf(upstream);
    const key = given === undefined ? undefined : this.storedKey(upstream.apiKey);
    const last4 = key === undefined ? null : key.reference ? this.referencedLastFour(key.reference) : lastFour(upstream.apiKey);
    const row = write === 'create' ? await store.createLine(spec, key!, last4) : await store.updateLine(upstream.id, version!, spec, key, last4);
    return this.changed('upstream', write, actor, current, row);
  }

  async writeModel(write: Write, body: Body, actor: string, id?: string): Promise<Body> {
    const store = this.sync.store;
    const version = write === 'create' ? undefined : versionOf(body);
    const current = write === 'create' ? undefined : await store.find('model', id!);
    const item = write === 'patch' ? { ...current!.spec, ...itemOf(body, id) } : itemOf(body, id);
    const spec = modelSpecOf(checked(parseModelItem(item, await store.lineIds())));
    const row = write === 'create' ? await store.createModel(spec) : await store.updateModel(spec.id as string, version!, spec);
    return this.changed('model', write, actor, current, row);
  }

  async remove(kind: CatalogKind, id: string, version: number | undefined, actor: string): Promise<Body> {
    const row = kind === 'upstream' ? await this.sync.store.deleteLine(id, version) : await this.sync.store.deleteModel(id, version);
    await this.sync.refresh();
    const before = this.view(kind, row);
    await this.audit.record({ actor, action: `${kind}.delete`, itemKind: kind, itemId: id, before, after: null });
    return before;
  }

  /** SIGHUP and `POST /admin/reload`: the file applied again, and logged. */
  async reload(actor: string): Promise<ReloadCounts> {
    const counts = await this.sync.reload();
    await this.audit.record({ actor, action: 'config.reload', itemKind: 'config', itemId: this.sync.configFile ?? null, before: null, after: counts });
    return counts;
  }

  /** Loads the change on this replica before the answer, and logs it with the item before and after. */
  private async changed(kind: CatalogKind, write: Write, actor: string, current: CatalogRow | undefined, row: CatalogRow): Promise<Body> {
    await this.sync.refresh();
    const after = this.view(kind, row);
    const action = `${kind}.${write === 'create' ? 'create' : 'update'}`;
    await this.audit.record({ actor, action, itemKind: kind, itemId: row.id, before: current ? this.view(kind, current) : null, after });
    return after;
  }

  /** A `${VAR}` reference set on this replica, or a literal sealed with GATEWAY_SECRET_KEY. */
  private storedKey(apiKey: string): StoredVendorKey {
    const variable = referencedVariable(apiKey);
    if (variable !== undefined) {
      const environment = this.sync.environment;
      if (environment && environment[variable] === undefined) {
        throw new GatewayError('invalid_request', `api_key: environment variable ${variable} is not set on this replica`);
      }
      return { reference: apiKey };
    }
    if (!this.sync.secrets.canSeal) {
      throw new GatewayError(
        'invalid_request',
        'api_key: a literal vendor key is stored encrypted, which needs GATEWAY_SECRET_KEY (32 bytes) on every replica; set it, or give a ${VAR} reference to an environment variable of every replica',
      );
    }
    return { sealed: this.sync.secrets.seal(apiKey) };
  }

  /** The last four characters of a reference's value here; null where the value is not known (the command line). */
  private referencedLastFour(reference: string): string | null {
    const value = this.sync.environment?.[referencedVariable(reference)!];
    return value === undefined ? null : lastFour(value);
  }

  private view(kind: CatalogKind, row: CatalogRow): Body {
    const bookkeeping = { source: row.source, version: row.version, created_at: row.createdAt.toISOString(), updated_at: row.updatedAt.toISOString() };
    if (kind === 'model') return { ...row.spec, ...bookkeeping };
    const set = Boolean(row.apiKeyRef || row.apiKeySealed || row.apiKeyLast4);
    const apiKey: VendorKeyView = { set, last4: row.apiKeyLast4 || null, reference: row.apiKeyRef ?? null };
    return { ...(row.spec as ItemSpec), api_key: apiKey, ...bookkeeping };
  }
}
