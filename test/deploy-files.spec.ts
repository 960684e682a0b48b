import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PATH_METADATA } from '@nestjs/common/constants';
import { parseAllDocuments } from 'yaml';
import { loadGatewayConfigFile } from '../src/config/config.loader';
import { defaultSettings, processSettingsFrom } from '../src/config/gateway-options';
import { HealthController } from '../src/health/health.controller';
import { Clock } from '../src/common/clock';
import type { AlertDelivery } from '../src/governance/alert-delivery';
import { RateLimiter } from '../src/governance/rate-limiter';
import { ReplicaLimits } from '../src/governance/replica-limits';
import type { UsageWriter } from '../src/metering/usage-writer.service';
import { GatewayMetrics } from '../src/observability/gateway-metrics';
import type { LineRegistry } from '../src/upstream/line-registry';
import type { DataSource } from 'typeorm';
import { NGINX } from './support/nginx';

/**
 * The deployment examples of docs/deploy/ (docs/operations.md "Orchestrators"), checked as far as
 * a machine without Docker or a cluster can: they parse, name what exists, probe the gateway's
 * real routes, give a stop the time it may take, and nginx accepts its configuration.
 */
const ROOT = resolve(__dirname, '..');
const DEPLOY = join(ROOT, 'docs', 'deploy');
const COMPOSE_FILE = join(DEPLOY, 'docker-compose.yml');
const KUBERNETES_FILE = join(DEPLOY, 'kubernetes.yaml');
/** The port the image listens on (the Dockerfile's `PORT`). */
const IMAGE_PORT = 8080;

/** Every YAML document of a file as plain values; a document that does not parse fails the test, naming it. */
function documentsOf(path: string): any[] {
  const documents = parseAllDocuments(readFileSync(path, 'utf8'));
  if (documents.length === 0) throw new Error(`${path} holds no document`);
  return documents.map((document, index) => {
    const problems = [...document.errors, ...document.warnings].map((problem) => problem.message);
    // The first problems are enough to find it; one broken line makes many.
    if (problems.length > 0) throw new Error(`${path}, document ${index + 1}: ${problems.slice(0, 3).join('; ')}`);
    return document.toJS();
  });
}

/** The probe routes the gateway serves, read from its health controller's route metadata. */
function probeRoutes(): { live: string; ready: string } {
  const base = Reflect.getMetadata(PATH_METADATA, HealthController) as string;
  const route = (method: 'live' | 'ready') => `/${base}/${Reflect.getMetadata(PATH_METADATA, HealthController.prototype[method]) as string}`;
  return { live: route('live'), ready: route('ready') };
}

/** The settings whose values are written out: one still holding a compose `${…}` comes from the operator's shell. */
function writtenOut(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => !value.includes('${')));
}

/**
 * The longest a stop may take with these settings, read by the gateway's own parsers: the
 * readiness delay, the drain, then usage writes retried while the database is away.
 */
function longestStopMs(env: Record<string, string>): number {
  const { shutdownDelayMs, shutdownDrainMs } = processSettingsFrom(writtenOut(env));
  return shutdownDelayMs + shutdownDrainMs + defaultSettings(writtenOut(env)).usageWriter.shutdownDeadlineMs;
}

/** A compose duration (`1m30s`, `50s`, `500ms`) in milliseconds. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|m|s)/g)];
  expect(parts.map((part) => part[0]).join('')).toBe(text);
  return parts.reduce((total, [, amount, unit]) => total + Number(amount) * units[unit], 0);
}

/** Compose's `environment`, as a map or as `NAME=value` lines. */
function composeEnv(environment: Record<string, unknown> | string[] | undefined): Record<string, string> {
  if (Array.isArray(environment)) return Object.fromEntries(environment.map((line) => [line.split('=')[0], line.slice(line.indexOf('=') + 1)]));
  return Object.fromEntries(Object.entries(environment ?? {}).map(([name, value]) => [name, String(value ?? '')]));
}

/** A compose short volume (`source:target[:mode]`) as its parts; a relative source is resolved against the compose file's folder. */
function mountOf(volume: string): { source: string; target: string } {
  const [source, target] = volume.split(':');
  return { source: source.startsWith('.') ? resolve(DEPLOY, source) : source, target };
}

/** The compose file's services by role: the gateway is the one built here. */
function readCompose() {
  const [compose] = documentsOf(COMPOSE_FILE);
  const services = Object.entries(compose.services as Record<string, any>);
  const [gatewayName, gateway] = services.find(([, service]) => service.build)!;
  const [, postgres] = services.find(([, service]) => String(service.image).startsWith('postgres:'))!;
  const [, nginx] = services.find(([, service]) => String(service.image).startsWith('nginx:'))!;
  return { compose, services, gatewayName, gateway, postgres, nginx, env: composeEnv(gateway.environment) };
}

describe('docs/deploy/docker-compose.yml', () => {
  // Read in beforeAll: a file that stops parsing fails every test here, and the other files are still checked.
  let compose: any, services: Array<[string, any]>, gatewayName: string, gateway: any, postgres: any, nginx: any, env: Record<string, string>;
  beforeAll(() => ({ compose, services, gatewayName, gateway, postgres, nginx, env } = readCompose()));

  it('gives every service a health check', () => {
    for (const [name, service] of services) expect([name, service.healthcheck?.test?.length > 0]).toEqual([name, true]);
  });

  it("builds two or more gateway replicas from the repository's Dockerfile, each checked by its readiness", () => {
    const context = resolve(DEPLOY, gateway.build.context);
    expect(existsSync(join(context, gateway.build.dockerfile ?? 'Dockerfile'))).toBe(true);
    expect(context).toBe(ROOT);
    expect(gateway.deploy.replicas).toBeGreaterThanOrEqual(2);
    expect(gateway.healthcheck.test.join(' ')).toContain(`127.0.0.1:${IMAGE_PORT}${probeRoutes().ready}'`);
  });

  it('mounts a configuration file that loads with the variables the replicas are given', () => {
    const mount = gateway.volumes.map(mountOf).find((volume: { target: string }) => volume.target === env.GATEWAY_CONFIG);
    const given = Object.fromEntries(Object.keys(env).map((name) => [name, `${name.toLowerCase()}-value`]));

    expect(mount?.source).toBe(join(DEPLOY, 'gateway.yaml'));
    expect(loadGatewayConfigFile(mount.source, given).models.length).toBeGreaterThan(0);
  });

  it('stores PostgreSQL on a named volume and starts the replicas once it is healthy', () => {
    const [volume] = (postgres.volumes as string[]).map(mountOf);
    expect(Object.keys(compose.volumes)).toContain(volume.source);
    expect(gateway.depends_on.postgres.condition).toBe('service_healthy');
    expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
  });

  it('lets a replica stop within stop_grace_period, and trusts the balancer with X-Forwarded-For', () => {
    expect(durationMs(gateway.stop_grace_period)).toBeGreaterThanOrEqual(longestStopMs(env));
    expect(defaultSettings(writtenOut(env)).server.trustedProxies.length).toBeGreaterThan(0);
  });

  it("puts nginx in front with docs/deploy/nginx.conf, its upstream naming the replicas' service and port", () => {
    const mount = (nginx.volumes as string[]).map(mountOf).find((volume) => volume.target === '/etc/nginx/nginx.conf');
    const conf = readFileSync(mount!.source, 'utf8');
    const published = String(nginx.ports[0]).split(':').pop();

    expect(mount!.source).toBe(join(DEPLOY, 'nginx.conf'));
    expect([...conf.matchAll(/^\s*server\s+([^\s;{]+)/gm)].map((match) => match[1])).toEqual([`${gatewayName}:${IMAGE_PORT}`]);
    expect(conf).toMatch(new RegExp(`^\\s*listen ${published};`, 'm'));
    expect(nginx.depends_on[gatewayName].condition).toBe('service_healthy');
  });
});

describe('docs/deploy/nginx.conf', () => {
  const path = join(DEPLOY, 'nginx.conf');
  const conf = readFileSync(path, 'utf8');

  // docs/operations.md "Several replicas" and test/support/nginx.ts.
  it.each([
    ['streams pass unbuffered', /^\s*proxy_buffering off;/m],
    ['request bodies pass unbuffered', /^\s*proxy_request_buffering off;/m],
    ['keep-alive connections to the replicas', /^\s*keepalive \d+;/m],
    ['HTTP/1.1 to the replicas', /^\s*proxy_http_version 1\.1;/m],
    ['no Connection header to the replicas', /^\s*proxy_set_header Connection "";/m],
    ['bodies up to 40 MiB', /^\s*client_max_body_size 40m;/m],
    ['the client in X-Forwarded-For', /^\s*proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/m],
  ])('has %s', (_what, directive) => {
    expect(conf).toMatch(directive);
  });

  it("waits on a replica longer than a line's default timeout_ms", () => {
    const [, seconds] = /^\s*proxy_read_timeout (\d+)s;/m.exec(conf) ?? [];
    expect(Number(seconds)).toBeGreaterThan(600);
  });

  (NGINX ? it : it.skip)('is accepted by `nginx -t`', async () => {
    // The upstream's compose name resolves only inside compose, and `nginx -t` resolves it; the
    // pid file, the error log and the temporary folders go to a folder of the test's own.
    const folder = await mkdtemp(join(tmpdir(), 'gateway-nginx-check-'));
    try {
      const temporaries = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
      for (const name of temporaries) await mkdir(join(folder, name));
      const paths = temporaries.map((name) => `  ${name}_temp_path ${join(folder, name)};`).join('\n');
      const local = conf.replace(/^(\s*server\s+)[^\s:;]+:/gm, (_line, lead: string) => `${lead}127.0.0.1:`).replace(/^http \{$/m, `http {\n${paths}`);
      await writeFile(join(folder, 'nginx.conf'), local);

      const args = ['-t', '-p', `${folder}/`, '-c', join(folder, 'nginx.conf'), '-e', join(folder, 'error.log'), '-g', `pid ${join(folder, 'nginx.pid')};`];
      const result = await promisify(execFile)(NGINX!, args).catch((error: { code: number; stderr: string }) => error);

      expect(result.stderr).toContain('test is successful');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

/** The Kubernetes file's documents, its Deployment's pod and container, the container's plain env values and ports (names and numbers). */
function readKubernetes() {
  const documents = documentsOf(KUBERNETES_FILE);
  const deployment = documents.find((document) => document.kind === 'Deployment');
  const pod = deployment.spec.template;
  const [container] = pod.spec.containers;
  const env: Record<string, string> = Object.fromEntries(
    (container.env as Array<{ name: string; value?: string }>).filter((item) => item.value !== undefined).map((item) => [item.name, item.value!]),
  );
  const containerPorts: Array<string | number> = container.ports.flatMap((port: { name?: string; containerPort: number }) => [port.name, port.containerPort]);
  return { documents, deployment, pod, container, env, containerPorts };
}

describe('docs/deploy/kubernetes.yaml', () => {
  let documents: any[], deployment: any, pod: any, container: any, env: Record<string, string>, containerPorts: Array<string | number>;
  beforeAll(() => ({ documents, deployment, pod, container, env, containerPorts } = readKubernetes()));

  it('holds a Deployment, a Service and a PodDisruptionBudget', () => {
    expect(documents.map((document) => document.kind).sort()).toEqual(['Deployment', 'PodDisruptionBudget', 'Service']);
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
  });

  it('probes readiness at /health/ready and liveness and start-up at /health/live, on the container port', () => {
    const routes = probeRoutes();
    expect(container.readinessProbe.httpGet.path).toBe(routes.ready);
    expect(container.livenessProbe.httpGet.path).toBe(routes.live);
    expect(container.startupProbe.httpGet.path).toBe(routes.live);
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) expect(containerPorts).toContain(probe.httpGet.port);
    expect(containerPorts).toContain(IMAGE_PORT);
  });

  it('gives a stopping pod longer than the readiness delay, the drain and the usage flush together', () => {
    expect(Number(env.SHUTDOWN_DELAY_MS)).toBeGreaterThan(0);
    expect(pod.spec.terminationGracePeriodSeconds * 1_000).toBeGreaterThanOrEqual(longestStopMs(env));
    expect(defaultSettings(env).server.trustedProxies.length).toBeGreaterThan(0);
  });

  it('takes DATABASE_URL and ADMIN_TOKEN from a Secret and the configuration file from a ConfigMap', () => {
    expect(env).not.toHaveProperty('DATABASE_URL');
    expect(env).not.toHaveProperty('ADMIN_TOKEN');
    expect(container.envFrom).toEqual(expect.arrayContaining([{ secretRef: { name: expect.any(String) } }]));
    const mount = container.volumeMounts.find((volume: { mountPath: string }) => env.GATEWAY_CONFIG.startsWith(`${volume.mountPath}/`));
    const volume = pod.spec.volumes.find((item: { name: string }) => item.name === mount?.name);
    expect(volume?.configMap?.name).toEqual(expect.any(String));
  });

  it('asks for CPU and memory and caps memory', () => {
    expect(container.resources.requests).toEqual({ cpu: expect.anything(), memory: expect.anything() });
    expect(container.resources.limits.memory).toEqual(expect.anything());
  });

  it("selects the Deployment's pods in its Service and its PodDisruptionBudget", () => {
    const service = documents.find((document) => document.kind === 'Service');
    const budget = documents.find((document) => document.kind === 'PodDisruptionBudget');
    expect(pod.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(pod.metadata.labels).toMatchObject(service.spec.selector);
    expect(pod.metadata.labels).toMatchObject(budget.spec.selector.matchLabels);
    for (const port of service.spec.ports) expect(containerPorts).toContain(port.targetPort);
    expect(budget.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });
});

// ---------------------------------------------------------------- Grafana dashboard

const DASHBOARD_FILE = join(DEPLOY, 'grafana-dashboard.json');

/** The metrics GET /metrics exposes, by name, and the names of their series (a histogram's `_bucket`, `_sum` and `_count`). */
interface Exposed {
  metrics: Set<string>;
  series: Map<string, string>;
}

/** What GET /metrics exposes, read from the `# TYPE` lines of the gateway's own registry (MetricsController renders it). */
async function exposedMetrics(): Promise<Exposed> {
  const lines = { all: () => [], isCooling: () => false, isRateLimited: () => false } as unknown as LineRegistry;
  const writer = { depth: 0, failedWrites: 0 } as unknown as UsageWriter;
  const database = { query: async () => [] } as unknown as DataSource;
  const alerts = { outcomes: { delivered: 0, failed: 0 } } as AlertDelivery;
  const replica = new ReplicaLimits(defaultSettings().replicaLimits);
  const text = await new GatewayMetrics(lines, writer, database, new RateLimiter(new Clock()), alerts, replica).render();
  const exposed: Exposed = { metrics: new Set(), series: new Map() };
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    exposed.metrics.add(name);
    exposed.series.set(name, name);
    if (type === 'histogram' || type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) exposed.series.set(`${name}${suffix}`, name);
  }
  return exposed;
}

/** PromQL words that look like names: binary operators, modifiers, special numbers. */
const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers,
 * ranges, label lists, Grafana's variables and numbers are taken out, except function names
 * (followed by a parenthesis) and PromQL's own words.
 */
function metricNamesOf(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ')
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ')
    .replace(/\boffset\s+-?[\w.]+/gi, ' ')
    .replace(/(?<![\w:.])\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi, ' ');
  const names = new Set<string>();
  for (const [, name, call] of bare.matchAll(/([a-zA-Z_:][\w:]*)(\s*\()?/g)) {
    if (call === undefined && !PROMQL_WORDS.has(name.toLowerCase())) names.add(name);
  }
  return [...names];
}

/** A query variable's metric names: `label_values(selector, label)` selects by its first argument, `query_result(…)` by its expression. */
function variableMetricNames(query: string): string[] {
  const labelValues = /^\s*label_values\((.*),\s*\w+\s*\)\s*$/s.exec(query);
  if (labelValues) return metricNamesOf(labelValues[1]);
  if (/^\s*label_values\(\s*\w+\s*\)\s*$/.test(query)) return [];
  const result = /^\s*query_result\((.*)\)\s*$/s.exec(query);
  return result ? metricNamesOf(result[1]) : metricNamesOf(query);
}

interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Array<{ expr?: string; datasource?: { type?: string; uid?: string } }>;
  panels?: DashboardPanel[];
}

/** Every panel, those of collapsed rows included, rows aside. */
function panelsOf(dashboard: { panels: DashboardPanel[] }): DashboardPanel[] {
  return dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]).filter((panel) => panel.type !== 'row');
}

describe('docs/deploy/grafana-dashboard.json', () => {
  let dashboard: any, panels: DashboardPanel[], exposed: Exposed;
  beforeAll(async () => {
    dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'));
    panels = panelsOf(dashboard);
    exposed = await exposedMetrics();
  });

  /** [panel or variable, metric name] of every name the dashboard's queries select. */
  function usedNames(): Array<[string, string]> {
    const used: Array<[string, string]> = [];
    for (const panel of panels) for (const target of panel.targets ?? []) for (const name of metricNamesOf(target.expr ?? '')) used.push([panel.title, name]);
    for (const variable of dashboard.templating.list.filter((item: { type: string }) => item.type === 'query')) {
      const query = typeof variable.query === 'string' ? variable.query : variable.query.query;
      for (const name of variableMetricNames(query)) used.push([`$${variable.name}`, name]);
    }
    return used;
  }

  it('finds the metric names of an expression, leaving out functions, labels, ranges, variables and numbers', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, sum by (le, entry) (rate(gateway_request_duration_seconds_bucket{entry=~"$entry", status="5xx"}[$__rate_interval]))) ' +
          '/ on (entry) group_left 3600 * 1e9 * max without (instance) (gateway_not_a_metric offset 1h) and bool up',
      ),
    ).toEqual(['gateway_request_duration_seconds_bucket', 'gateway_not_a_metric', 'up']);
    expect(variableMetricNames('label_values(gateway_build_info{job="gateway"}, instance)')).toEqual(['gateway_build_info']);
    expect(variableMetricNames('label_values(instance)')).toEqual([]);
  });

  it('reads its Prometheus data source from a variable, in every panel and query', () => {
    const variable = dashboard.templating.list.find((item: { type: string }) => item.type === 'datasource');
    const source = { type: 'prometheus', uid: `\${${variable.name}}` };

    expect(variable.query).toBe('prometheus');
    expect(panels.length).toBeGreaterThan(10);
    for (const panel of panels) {
      expect([panel.title, panel.datasource]).toEqual([panel.title, source]);
      expect([panel.title, panel.targets?.length]).toEqual([panel.title, expect.any(Number)]);
      for (const target of panel.targets!) expect([panel.title, target.datasource, typeof target.expr]).toEqual([panel.title, source, 'string']);
    }
    expect(new Set(dashboard.panels.flatMap((panel: DashboardPanel) => [panel, ...(panel.panels ?? [])]).map((panel: DashboardPanel) => panel.id)).size).toBe(
      dashboard.panels.flatMap((panel: DashboardPanel) => [panel, ...(panel.panels ?? [])]).length,
    );
  });

  it('queries only metrics that GET /metrics exposes', () => {
    const used = usedNames();

    expect(used.length).toBeGreaterThan(20);
    expect(used.filter(([, name]) => !exposed.series.has(name))).toEqual([]);
  });

  it("shows every one of the gateway's own metrics", () => {
    const shown = new Set(usedNames().map(([, name]) => exposed.series.get(name)));
    const own = [...exposed.metrics].filter((name) => name.startsWith('gateway_'));

    expect(own.length).toBeGreaterThan(20);
    expect(own.filter((name) => !shown.has(name))).toEqual([]);
  });
});
