/**
 * The deployment files (deploy/): nothing here can run a cluster or build an image, so this checks
 * what can be checked — the manifests parse, every HTTP probe they declare is a path a real
 * `veltair serve` answers 200 on, every probe and Service targets the port the container listens
 * on (the image's ENTRYPOINT port unless the manifest's args override it), the pod's CPU request
 * equals its limit (whole cores veltair can pin), and the Dockerfile serves the repository on the
 * port it exposes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { compileModels, model, startInProcess, type InProcessServer } from './serve-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'veltair-deploy-'));
let srv: InProcessServer;
before(
  async () => {
    const b = await compileModels(root, ['tiny']);
    srv = await startInProcess([model('tiny', b['tiny']!)]);
  },
  { timeout: 300_000 },
);
after(async () => {
  await srv?.server.stop();
  rmSync(root, { recursive: true, force: true });
});

type Doc = Record<string, unknown>;
const docs = (file: string): Doc[] =>
  parseAllDocuments(readFileSync(join('deploy', file), 'utf8')).map((d) => {
    assert.equal(d.errors.length, 0, `${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as Doc;
  });

const dockerfile = readFileSync('deploy/Dockerfile', 'utf8');
const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[];

/** The port `veltair serve` listens on for these args appended to the image's ENTRYPOINT (the last --port wins). */
function listenPort(args: readonly string[]): number {
  const all = [...entrypoint, ...args];
  const at = all.lastIndexOf('--port');
  return at >= 0 ? Number(all[at + 1]) : 8000;
}

interface Container {
  args?: string[];
  ports?: { containerPort: number }[];
  readinessProbe?: { httpGet: { path: string; port: number } };
  livenessProbe?: { httpGet: { path: string; port: number } };
  resources?: { requests?: { cpu?: string }; limits?: { cpu?: string } };
}

function containersOf(d: Doc): Container[] {
  if (d['kind'] === 'Deployment') return ((d['spec'] as Doc)['template'] as { spec: { containers: Container[] } }).spec.containers;
  if (d['kind'] === 'InferenceService') return ((d['spec'] as Doc)['predictor'] as { containers: Container[] }).containers;
  return [];
}

test('the Dockerfile serves the model repository on every address of the pod, on the port it exposes', () => {
  assert.deepEqual(entrypoint.slice(0, 4), ['node', '--single-threaded-gc', 'bin/veltair', 'serve'], 'started as bin/veltair starts node');
  assert.ok(entrypoint.includes('--repo'));
  assert.equal(entrypoint[entrypoint.indexOf('--host') + 1], '0.0.0.0');
  assert.equal(Number(/^EXPOSE (\d+)$/m.exec(dockerfile)![1]), listenPort([]));
  assert.match(dockerfile, /npm ci --omit=dev/, 'the runtime image installs no development dependency');
});

test('every probe the manifests declare is a path veltair serve answers 200 on, at the port it listens on', async () => {
  const files = ['kubernetes.yaml', 'kserve-inferenceservice.yaml'];
  let probes = 0;
  for (const file of files) {
    for (const d of docs(file)) {
      for (const c of containersOf(d)) {
        const port = listenPort(c.args ?? []);
        assert.ok(
          (c.ports ?? []).some((p) => p.containerPort === port),
          `${file}: the container port is the port serve listens on (${port})`,
        );
        assert.equal(c.resources?.requests?.cpu, c.resources?.limits?.cpu, `${file}: whole cores (requests == limits)`);
        for (const probe of [c.readinessProbe, c.livenessProbe]) {
          assert.ok(probe, `${file}: readiness and liveness probes`);
          assert.equal(probe.httpGet.port, port, `${file}: ${probe.httpGet.path} probes the serving port`);
          const r = await fetch(`${srv.url}${probe.httpGet.path}`);
          assert.equal(r.status, 200, `${file}: GET ${probe.httpGet.path}`);
          probes++;
        }
      }
      if (d['kind'] === 'Service') {
        const ports = (d['spec'] as { ports: { targetPort: number }[] }).ports;
        assert.ok(
          ports.every((p) => p.targetPort === listenPort([])),
          `${file}: the Service targets the serving port`,
        );
      }
    }
  }
  assert.equal(probes, 4);
});
