import type {
  AlertView,
  AuditEntryView,
  BudgetPeriod,
  CatalogModelView,
  CreatedKeyView,
  DailyTotalView,
  KeyView,
  LineStateView,
  MinuteTotalView,
  ModelLine,
  ModelRetry,
  ModelView,
  OwnerKind,
  OwnerView,
  Page,
  RateLimits,
  SessionView,
  UpstreamView,
  UsageRecordView,
  VideoTaskState,
  VideoTaskView,
} from './types';

/**
 * The one way the console talks to the admin API (same origin). The sign-in cookie is HttpOnly
 * and travels by itself; the CSRF token lives only in this module's memory, so a reload of the
 * page fetches it again from GET /admin/session.
 */

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;
let onSessionEnded: (() => void) | null = null;

/** Called once when a request made while signed in answers 401: the session has ended. */
export function whenSessionEnds(listener: () => void): void {
  onSessionEnded = listener;
}

function errorOf(status: number, body: unknown): ApiError {
  const error = (body as { error?: { message?: unknown; code?: unknown } } | null)?.error;
  const message = typeof error?.message === 'string' && error.message !== '' ? error.message : `The gateway answered HTTP ${status}.`;
  return new ApiError(status, typeof error?.code === 'string' ? error.code : null, message);
}

export async function call<T>(method: Method, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET' && csrfToken !== null) headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, { method, credentials: 'same-origin', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'network_error', 'The gateway could not be reached. Check the connection and try again.');
  }
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      // A proxy's HTML error page: the status alone tells what happened.
    }
  }
  if (!response.ok) {
    if (response.status === 401 && csrfToken !== null) {
      csrfToken = null;
      onSessionEnded?.();
    }
    throw errorOf(response.status, parsed);
  }
  return parsed as T;
}

/** A query string of the given values, leaving out the empty ones. */
export function query(values: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

const segment = encodeURIComponent;

/** Every item of a paged list, following `next` (lists the console needs whole, such as owners for a select). */
async function everyPage<T>(path: string, filters: Record<string, string | undefined> = {}): Promise<T[]> {
  const items: T[] = [];
  let after: string | undefined;
  // A bound, so a server that always answers `next` cannot keep the page loading for ever.
  for (let pages = 0; pages < 50; pages++) {
    const page = await call<Page<T>>('GET', `${path}${query({ ...filters, limit: 1000, after })}`);
    items.push(...page.data);
    if (page.next === null) break;
    after = page.next;
  }
  return items;
}

// Session

export async function currentSession(): Promise<SessionView | null> {
  // Answers 200 either way, so a page that is not signed in yet logs no failed request.
  const session = await call<SessionView | { signed_in: false }>('GET', '/admin/session');
  if (!session.signed_in) return null;
  csrfToken = session.csrf_token;
  return session;
}

export async function signIn(token: string): Promise<SessionView> {
  const session = await call<SessionView>('POST', '/admin/session', { token });
  csrfToken = session.csrf_token;
  return session;
}

export async function signOut(): Promise<void> {
  try {
    await call<void>('DELETE', '/admin/session');
  } finally {
    csrfToken = null;
  }
}

// Owners

export const listOwners = (): Promise<OwnerView[]> => everyPage<OwnerView>('/admin/owners');

/** How an owner's budget runs; in a change, an absent field stays and null clears it. */
export interface BudgetTerms {
  budget_period?: BudgetPeriod | null;
  /** IANA time zone name; null: UTC. */
  budget_timezone?: string | null;
  /** Per cent thresholds; null: none. */
  alerts?: number[] | null;
}

export const createOwner = (body: { id: string; kind: OwnerKind; budget?: string; limits?: RateLimits } & BudgetTerms): Promise<OwnerView> =>
  call('POST', '/admin/owners', body);

/** `budget` a decimal string, sent as a string so it is converted exactly; null: unlimited. Absent fields stay. */
export const setBudget = (id: string, change: { budget?: string | null } & BudgetTerms): Promise<OwnerView> =>
  call('PATCH', `/admin/owners/${segment(id)}`, change);

/** The budget alerts an owner fired, newest first. */
export const listAlerts = (ownerId: string, limit: number): Promise<Page<AlertView>> => call('GET', `/admin/alerts${query({ owner_id: ownerId, limit })}`);

/** The limits given replace the stored ones: a limit sent as null is cleared. */
export const setOwnerLimits = (id: string, limits: RateLimits): Promise<OwnerView> => call('PATCH', `/admin/owners/${segment(id)}`, { limits });

export const renewProjectKeys = (id: string, expiresAt: string | null): Promise<{ data: KeyView[] }> =>
  call('POST', `/admin/owners/${segment(id)}/renew-keys`, { expires_at: expiresAt });

// Keys

export const listKeys = (filters: { owner?: string; limit?: number; after?: string }): Promise<Page<KeyView>> => call('GET', `/admin/keys${query(filters)}`);

export const listAllKeys = (owner: string): Promise<KeyView[]> => everyPage<KeyView>('/admin/keys', { owner });

export const createKey = (body: { owner: string; models: string[]; expires_at?: string; limits?: RateLimits; budget?: string }): Promise<CreatedKeyView> =>
  call('POST', '/admin/keys', body);

/** The key's own budget, a decimal string; null clears it. */
export const setKeyBudget = (id: string, budget: string | null): Promise<KeyView> => call('PATCH', `/admin/keys/${segment(id)}`, { budget });

/** The key's own limits; as for an owner, a limit sent as null is cleared. */
export const setKeyLimits = (id: string, limits: RateLimits): Promise<KeyView> => call('PATCH', `/admin/keys/${segment(id)}`, { limits });

export const setKeyEnabled = (id: string, enabled: boolean): Promise<KeyView> => call('POST', `/admin/keys/${segment(id)}/${enabled ? 'enable' : 'disable'}`);

export const renewKey = (id: string, expiresAt: string | null): Promise<KeyView> => call('POST', `/admin/keys/${segment(id)}/renew`, { expires_at: expiresAt });

export const deleteKey = (id: string): Promise<KeyView> => call('DELETE', `/admin/keys/${segment(id)}`);

// Catalog

export const listModels = async (): Promise<ModelView[]> => (await call<{ data: ModelView[] }>('GET', '/admin/models')).data;

export const listCatalogModels = async (): Promise<CatalogModelView[]> => (await call<{ data: CatalogModelView[] }>('GET', '/admin/models')).data;

export const catalogModel = (id: string): Promise<CatalogModelView> => call('GET', `/admin/models/${segment(id)}`);

/** The JSON form of a configuration-file `models` item; `null` clears an optional field in a change. */
export type ModelBody = Record<string, unknown> & { lines?: ModelLine[]; retry?: ModelRetry | null };

export const createModel = (body: ModelBody): Promise<CatalogModelView> => call('POST', '/admin/models', body);

/** The given fields replace the stored ones; `version` is the one read (another gives 409). */
export const changeModel = (id: string, version: number, body: ModelBody): Promise<CatalogModelView> =>
  call('PATCH', `/admin/models/${segment(id)}`, { ...body, version });

export const deleteModel = (id: string, version: number): Promise<CatalogModelView> => call('DELETE', `/admin/models/${segment(id)}${query({ version })}`);

export const listUpstreams = async (): Promise<UpstreamView[]> => (await call<{ data: UpstreamView[] }>('GET', '/admin/upstreams')).data;

export const upstream = (id: string): Promise<UpstreamView> => call('GET', `/admin/upstreams/${segment(id)}`);

/** The JSON form of a configuration-file `upstreams` item; without `api_key` a change keeps the stored key. */
export type UpstreamBody = Record<string, unknown>;

export const createUpstream = (body: UpstreamBody): Promise<UpstreamView> => call('POST', '/admin/upstreams', body);

export const changeUpstream = (id: string, version: number, body: UpstreamBody): Promise<UpstreamView> =>
  call('PATCH', `/admin/upstreams/${segment(id)}`, { ...body, version });

/** 409 while a model names the line: the message names those models. */
export const deleteUpstream = (id: string, version: number): Promise<UpstreamView> => call('DELETE', `/admin/upstreams/${segment(id)}${query({ version })}`);

// Operations

/** The live state of the lines on the replica that answers. */
export const lineStates = async (): Promise<LineStateView[]> => (await call<{ data: LineStateView[] }>('GET', '/admin/lines')).data;

export const listVideoTasks = (filters: { state?: VideoTaskState; owner?: string; limit?: number; after?: string }): Promise<Page<VideoTaskView>> =>
  call('GET', `/admin/video-tasks${query({ ...filters })}`);

// Usage

export interface UsageFilters {
  owner?: string;
  key?: string;
  model?: string;
  interface?: string;
  status?: string;
  from?: string;
  to?: string;
}

export const listUsage = (filters: UsageFilters & { limit?: number; after?: string }): Promise<Page<UsageRecordView>> =>
  call('GET', `/admin/usage${query({ ...filters })}`);

export const usageRecord = (requestId: string): Promise<UsageRecordView> => call('GET', `/admin/usage/${segment(requestId)}`);

export const dailyTotals = async (filters: {
  from: string;
  to: string;
  owner?: string;
  model?: string;
  group_by?: 'model' | 'owner';
}): Promise<DailyTotalView[]> => (await call<{ data: DailyTotalView[] }>('GET', `/admin/usage/daily${query(filters)}`)).data;

/** Calls per minute over the last `minutes` minutes, oldest first; minutes without calls are left out. */
export const minuteTotals = async (filters: { minutes: number; owner?: string; model?: string }): Promise<MinuteTotalView[]> =>
  (await call<{ data: MinuteTotalView[] }>('GET', `/admin/usage/minutes${query(filters)}`)).data;

// Audit

export interface AuditFilters {
  actor?: string;
  action?: string;
  item_kind?: string;
  item_id?: string;
}

export const listAudit = (filters: AuditFilters & { limit?: number; after?: string }): Promise<Page<AuditEntryView>> =>
  call('GET', `/admin/audit${query({ ...filters })}`);

/** What `POST /admin/reload` applied from the configuration file. */
export interface ReloadCounts {
  upstreams: number;
  models: number;
  owners: number;
  keys: number;
}

/** Reads the configuration file again (as SIGHUP does); a file with a problem changes nothing and answers 400. */
export function reloadConfiguration(): Promise<ReloadCounts> {
  return call<ReloadCounts>('POST', '/admin/reload');
}
