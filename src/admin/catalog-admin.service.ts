import { Injectable } from '@nestjs/common';
import { GatewayError } from '../common/gateway-error';
import { ItemSpec, modelSpecOf, upstreamSpecOf } from '../config/catalog-spec';
import { ItemResult, parseModelItem, parseUpstreamItem } from '../config/config.loader';
import type { CatalogKind, CatalogRow } from '../catalog/catalog-store';
import { CatalogSync } from '../catalog/catalog-sync.service';
import { lastFour, referencedVariable, StoredVendorKey } from '../catalog/line-secrets';

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
  if (text === undefined) return undefined;
  const version = Number(text);
  if (!/^\d+$/.test(text) || version < 1) throw new GatewayError('invalid_request', 'version: must be a whole number from 1');
  return version;
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
@Injectable()
export class CatalogAdminService {
  constructor(private readonly sync: CatalogSync) {}

  async list(kind: CatalogKind): Promise<{ data: Body[] }> {
    const contents = await this.sync.store.contents();
    const rows = kind === 'upstream' ? contents.upstreams : contents.models;
    return { data: rows.map((row) => this.view(kind, row)) };
  }

  async show(kind: CatalogKind, id: string): Promise<Body> {
    return this.view(kind, await this.sync.store.find(kind, id));
  }

  async writeUpstream(write: Write, body: Body, id?: string): Promise<Body> {
    const store = this.sync.store;
    const version = write === 'create' ? undefined : versionOf(body);
    const current = write === 'patch' ? await store.find('upstream', id!) : undefined;
    const item = current ? { ...current.spec, ...itemOf(body, id) } : itemOf(body, id);
    const given = item.api_key;
    if (write === 'create' && given === undefined) throw new GatewayError('invalid_request', 'api_key: is required');
    // The file's rules check the key as a non-empty string; it is kept apart from the stored form.
    const upstream = checked(parseUpstreamItem({ ...item, api_key: given ?? 'kept' }));
    const spec = upstreamSpecOf(upstream);
    const key = given === undefined ? undefined : this.storedKey(upstream.apiKey);
    const last4 = key === undefined ? null : key.reference ? lastFour(process.env[referencedVariable(key.reference)!] ?? '') : lastFour(upstream.apiKey);
    const row = write === 'create' ? await store.createLine(spec, key!, last4) : await store.updateLine(upstream.id, version!, spec, key, last4);
    await this.sync.refresh();
    return this.view('upstream', row);
  }

  async writeModel(write: Write, body: Body, id?: string): Promise<Body> {
    const store = this.sync.store;
    const version = write === 'create' ? undefined : versionOf(body);
    const current = write === 'patch' ? await store.find('model', id!) : undefined;
    const item = current ? { ...current.spec, ...itemOf(body, id) } : itemOf(body, id);
    const spec = modelSpecOf(checked(parseModelItem(item, await store.lineIds())));
    const row = write === 'create' ? await store.createModel(spec) : await store.updateModel(spec.id as string, version!, spec);
    await this.sync.refresh();
    return this.view('model', row);
  }

  async remove(kind: CatalogKind, id: string, version: number | undefined): Promise<Body> {
    const row = kind === 'upstream' ? await this.sync.store.deleteLine(id, version) : await this.sync.store.deleteModel(id, version);
    await this.sync.refresh();
    return this.view(kind, row);
  }

  /** A `${VAR}` reference set on this replica, or a literal sealed with GATEWAY_SECRET_KEY. */
  private storedKey(apiKey: string): StoredVendorKey {
    const variable = referencedVariable(apiKey);
    if (variable !== undefined) {
      if (process.env[variable] === undefined)
        throw new GatewayError('invalid_request', `api_key: environment variable ${variable} is not set on this replica`);
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

  private view(kind: CatalogKind, row: CatalogRow): Body {
    const bookkeeping = { source: row.source, version: row.version, created_at: row.createdAt.toISOString(), updated_at: row.updatedAt.toISOString() };
    if (kind === 'model') return { ...row.spec, ...bookkeeping };
    const apiKey: VendorKeyView = { set: Boolean(row.apiKeyLast4), last4: row.apiKeyLast4 || null, reference: row.apiKeyRef ?? null };
    return { ...(row.spec as ItemSpec), api_key: apiKey, ...bookkeeping };
  }
}
