import type { DataSource, EntityManager } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import type { ItemSpec } from '../config/catalog-spec';
import { lineIdsOfItems } from '../config/model-lines';
import type { RecordSource } from '../auth/quota-owner.entity';
import { returnedRows } from '../database/returned-rows';
import type { StoredVendorKey } from './line-secrets';

/** The channel a replica that changed the catalog notifies; the others reload on it. */
export const CATALOG_CHANNEL = 'gateway_catalog';

export type CatalogKind = 'upstream' | 'model';

/** A stored line or model: its JSON form and the bookkeeping around it. */
export interface CatalogRow {
  id: string;
  spec: ItemSpec;
  source: RecordSource;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  /** Lines only: how the vendor key is kept. */
  apiKeyRef?: string | null;
  apiKeySealed?: string | null;
  apiKeyLast4?: string | null;
}

/** Everything the catalog holds, read at one moment, with the counter of changes it reflects. */
export interface CatalogContents {
  version: number;
  upstreams: CatalogRow[];
  models: CatalogRow[];
}

/** A line of the configuration file, as applied at start-up and on reload. */
export interface ConfigLine {
  spec: ItemSpec;
  last4: string;
}

/** A row as the driver returns it. */
interface StoredRow {
  id: string;
  spec: ItemSpec;
  source: RecordSource;
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
  api_key_ref?: string | null;
  api_key_sealed?: string | null;
  api_key_last4?: string | null;
}

const TABLE: { [kind in CatalogKind]: string } = { upstream: 'upstream_line', model: 'catalog_model' };
const WHAT: { [kind in CatalogKind]: string } = { upstream: 'upstream line', model: 'model' };

function rowOf(record: StoredRow): CatalogRow {
  return {
    id: record.id,
    spec: record.spec,
    source: record.source,
    version: Number(record.version),
    createdAt: new Date(record.created_at),
    updatedAt: new Date(record.updated_at),
    ...(record.api_key_last4 !== undefined ? { apiKeyRef: record.api_key_ref, apiKeySealed: record.api_key_sealed, apiKeyLast4: record.api_key_last4 } : {}),
  };
}

function missing(kind: CatalogKind, id: string): GatewayError {
  return new GatewayError('not_found', `No ${WHAT[kind]} has the id ${JSON.stringify(id)}.`);
}

/**
 * Lines and models in the database. Every write takes a row's `version` (a stale one is a 409),
 * counts the change in `catalog_version` and notifies CATALOG_CHANNEL in the same transaction,
 * so every replica sees it once it is committed.
 */
export class CatalogStore {
  constructor(private readonly dataSource: DataSource) {}

  /** The whole catalog at one moment. */
  contents(): Promise<CatalogContents> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const [{ version }] = await manager.query(`SELECT version FROM catalog_version WHERE id = 1`);
      const upstreams = await manager.query(`SELECT * FROM upstream_line ORDER BY ordinal`);
      const models = await manager.query(`SELECT * FROM catalog_model ORDER BY ordinal`);
      return { version: Number(version), upstreams: upstreams.map(rowOf), models: models.map(rowOf) };
    });
  }

  async lineIds(): Promise<Set<string>> {
    const rows = (await this.dataSource.query(`SELECT id FROM upstream_line`)) as Array<{ id: string }>;
    return new Set(rows.map((row) => row.id));
  }

  async version(): Promise<number> {
    const [{ version }] = await this.dataSource.query(`SELECT version FROM catalog_version WHERE id = 1`);
    return Number(version);
  }

  async find(kind: CatalogKind, id: string): Promise<CatalogRow> {
    const [record] = await this.dataSource.query(`SELECT * FROM ${TABLE[kind]} WHERE id = $1`, [id]);
    if (!record) throw missing(kind, id);
    return rowOf(record);
  }

  /**
   * The file's lines and models, as `source: config`: new ids are added, the file's values
   * replace those of an id that exists (whoever made it), and a line's key goes back to the
   * file's. Items the file does not name stay. Counts as a change only when something changed.
   */
  async applyConfig(lines: ConfigLine[], models: ItemSpec[]): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      let changed = 0;
      for (const { spec, last4 } of lines) {
        const rows = await manager.query(
          `INSERT INTO upstream_line AS line (id, spec, api_key_last4, source) VALUES ($1, $2, $3, 'config')
           ON CONFLICT (id) DO UPDATE SET spec = EXCLUDED.spec, api_key_ref = NULL, api_key_sealed = NULL,
             api_key_last4 = EXCLUDED.api_key_last4, source = 'config', version = line.version + 1, updated_at = now()
           WHERE line.spec IS DISTINCT FROM EXCLUDED.spec OR line.source <> 'config' OR line.api_key_ref IS NOT NULL
             OR line.api_key_sealed IS NOT NULL OR line.api_key_last4 IS DISTINCT FROM EXCLUDED.api_key_last4
           RETURNING id`,
          [spec.id, JSON.stringify(spec), last4],
        );
        changed += returnedRows(rows).length;
      }
      for (const spec of models) {
        const rows = await manager.query(
          `INSERT INTO catalog_model AS model (id, spec, source) VALUES ($1, $2, 'config')
           ON CONFLICT (id) DO UPDATE SET spec = EXCLUDED.spec, source = 'config', version = model.version + 1, updated_at = now()
           WHERE model.spec IS DISTINCT FROM EXCLUDED.spec OR model.source <> 'config'
           RETURNING id`,
          [spec.id, JSON.stringify(spec)],
        );
        changed += returnedRows(rows).length;
      }
      if (changed > 0) await this.counted(manager);
      return changed > 0;
    });
  }

  async createLine(spec: ItemSpec, key: StoredVendorKey, last4: string | null): Promise<CatalogRow> {
    return this.write(async (manager) => {
      const rows = await manager.query(
        `INSERT INTO upstream_line (id, spec, api_key_ref, api_key_sealed, api_key_last4, source) VALUES ($1, $2, $3, $4, $5, 'admin')
         ON CONFLICT (id) DO NOTHING RETURNING *`,
        [spec.id, JSON.stringify(spec), key.reference ?? null, key.sealed ?? null, last4],
      );
      return this.created('upstream', spec.id as string, rows);
    });
  }

  /** A new JSON form for a line; `key` undefined keeps the stored vendor key. */
  async updateLine(id: string, version: number, spec: ItemSpec, key: StoredVendorKey | undefined, last4: string | null): Promise<CatalogRow> {
    return this.write(async (manager) => {
      const keyColumns = key ? `, api_key_ref = $4, api_key_sealed = $5, api_key_last4 = $6` : '';
      const keyValues = key ? [key.reference ?? null, key.sealed ?? null, last4] : [];
      const rows = await manager.query(
        `UPDATE upstream_line SET spec = $3${keyColumns}, version = version + 1, updated_at = now() WHERE id = $1 AND version = $2 RETURNING *`,
        [id, version, JSON.stringify(spec), ...keyValues],
      );
      return this.updated(manager, 'upstream', id, version, rows);
    });
  }

  /** 409 while a model still names the line: change or delete those models first. */
  async deleteLine(id: string, version: number | undefined): Promise<CatalogRow> {
    return this.write(async (manager) => {
      const row = await this.locked(manager, 'upstream', id, version);
      // The models naming the line, locked so none is written to name it meanwhile (writes lock their lines FOR SHARE).
      const users = (await manager.query(`SELECT id FROM catalog_model WHERE spec->'lines' ? $1 ORDER BY id FOR UPDATE`, [id])) as Array<{ id: string }>;
      const using = users.map((model) => model.id);
      if (using.length > 0) {
        throw new GatewayError('conflict', `The upstream line ${JSON.stringify(id)} is used by the models ${using.join(', ')}; change or delete them first.`);
      }
      await manager.query(`DELETE FROM upstream_line WHERE id = $1`, [id]);
      return row;
    });
  }

  async createModel(spec: ItemSpec): Promise<CatalogRow> {
    return this.write(async (manager) => {
      await this.linesExist(manager, spec);
      const rows = await manager.query(`INSERT INTO catalog_model (id, spec, source) VALUES ($1, $2, 'admin') ON CONFLICT (id) DO NOTHING RETURNING *`, [
        spec.id,
        JSON.stringify(spec),
      ]);
      return this.created('model', spec.id as string, rows);
    });
  }

  async updateModel(id: string, version: number, spec: ItemSpec): Promise<CatalogRow> {
    return this.write(async (manager) => {
      await this.linesExist(manager, spec);
      const rows = await manager.query(
        `UPDATE catalog_model SET spec = $3, version = version + 1, updated_at = now() WHERE id = $1 AND version = $2 RETURNING *`,
        [id, version, JSON.stringify(spec)],
      );
      return this.updated(manager, 'model', id, version, rows);
    });
  }

  async deleteModel(id: string, version: number | undefined): Promise<CatalogRow> {
    return this.write(async (manager) => {
      const row = await this.locked(manager, 'model', id, version);
      await manager.query(`DELETE FROM catalog_model WHERE id = $1`, [id]);
      return row;
    });
  }

  /** A change in one transaction, counted and announced with it. */
  private write<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(async (manager) => {
      const result = await work(manager);
      await this.counted(manager);
      return result;
    });
  }

  private async counted(manager: EntityManager): Promise<void> {
    const rows = await manager.query(`UPDATE catalog_version SET version = version + 1 WHERE id = 1 RETURNING version`);
    const [{ version }] = returnedRows<{ version: string }>(rows);
    await manager.query(`SELECT pg_notify($1, $2)`, [CATALOG_CHANNEL, String(version)]);
  }

  private created(kind: CatalogKind, id: string, rows: unknown): CatalogRow {
    const [record] = returnedRows<StoredRow>(rows);
    if (!record) throw new GatewayError('conflict', `The ${WHAT[kind]} ${JSON.stringify(id)} exists already.`);
    return rowOf(record);
  }

  private async updated(manager: EntityManager, kind: CatalogKind, id: string, version: number, rows: unknown): Promise<CatalogRow> {
    const [record] = returnedRows<StoredRow>(rows);
    if (record) return rowOf(record);
    const [current] = await manager.query(`SELECT version FROM ${TABLE[kind]} WHERE id = $1`, [id]);
    if (!current) throw missing(kind, id);
    throw stale(kind, id, version, Number(current.version));
  }

  /** The row, locked for the rest of the transaction; a given version must be the stored one. */
  private async locked(manager: EntityManager, kind: CatalogKind, id: string, version: number | undefined): Promise<CatalogRow> {
    const [record] = await manager.query(`SELECT * FROM ${TABLE[kind]} WHERE id = $1 FOR UPDATE`, [id]);
    if (!record) throw missing(kind, id);
    const row = rowOf(record);
    if (version !== undefined && row.version !== version) throw stale(kind, id, version, row.version);
    return row;
  }

  /** A model's lines must exist when it is written; they stay locked until the transaction ends, so none is deleted meanwhile. */
  private async linesExist(manager: EntityManager, spec: ItemSpec): Promise<void> {
    const named = lineIdsOfItems(spec.lines);
    const found = (await manager.query(`SELECT id FROM upstream_line WHERE id = ANY($1) FOR SHARE`, [named])) as Array<{ id: string }>;
    const unknown = named.filter((line) => !found.some((row) => row.id === line));
    if (unknown.length > 0) {
      const index = named.indexOf(unknown[0]);
      throw new GatewayError('invalid_request', `lines[${index}]: unknown upstream ${JSON.stringify(unknown[0])}`);
    }
  }
}

function stale(kind: CatalogKind, id: string, given: number, stored: number): GatewayError {
  return new GatewayError(
    'conflict',
    `The ${WHAT[kind]} ${JSON.stringify(id)} is at version ${stored}, not ${given}: someone changed it since you read it; read it again and redo your change.`,
  );
}
