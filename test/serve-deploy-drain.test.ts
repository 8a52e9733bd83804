/**
 * The Kubernetes manifest's termination settings fit the server's drain (docs/kubernetes.md): the
 * kubelet's SIGKILL comes after preStop and the whole drain deadline, and the readiness probe fails
 * within the grace period; every drain flag it passes is one `veltair serve` knows.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { buildProgram } from '../src/cli/main.js';
import { DEFAULT_LIMITS } from '../src/serve/limits.js';

interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: {
    args?: string[];
    lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
    readinessProbe?: { periodSeconds?: number; failureThreshold?: number };
  }[];
}

const flag = (args: readonly string[], name: string, fallback: number) => {
  const at = args.lastIndexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};

test('deploy/kubernetes.yaml: SIGKILL comes after preStop + --drain-timeout-ms, readiness fails within --drain-grace-ms', () => {
  const docs = parseAllDocuments(readFileSync('deploy/kubernetes.yaml', 'utf8')).map((d) => d.toJS() as { kind: string; spec: unknown });
  const deployment = docs.find((d) => d.kind === 'Deployment');
  assert.ok(deployment, 'a Deployment');
  const pod = (deployment.spec as { template: { spec: PodSpec } }).template.spec;
  const serveFlags = buildProgram()
    .commands.find((c) => c.name() === 'serve')!
    .options.map((o) => o.long);
  for (const c of pod.containers) {
    const args = c.args ?? [];
    for (const a of args.filter((x) => x.startsWith('--'))) assert.ok(serveFlags.includes(a), `veltair serve knows ${a}`);
    const preStop = c.lifecycle?.preStop;
    assert.ok(preStop, 'a preStop hook keeps serving while load balancers drop the pod');
    const sleepS = preStop.sleep?.seconds ?? (preStop.exec?.command[0] === 'sleep' ? Number(preStop.exec.command[1]) : NaN);
    assert.ok(sleepS > 0, 'preStop sleeps');
    const graceMs = flag(args, '--drain-grace-ms', DEFAULT_LIMITS.drainGraceMs);
    const deadlineMs = flag(args, '--drain-timeout-ms', DEFAULT_LIMITS.drainTimeoutMs);
    const killAfterS = pod.terminationGracePeriodSeconds ?? 30;
    assert.ok(
      killAfterS * 1000 > sleepS * 1000 + deadlineMs,
      `terminationGracePeriodSeconds ${killAfterS} s must exceed preStop ${sleepS} s + --drain-timeout-ms ${deadlineMs} ms`,
    );
    const probe = c.readinessProbe;
    assert.ok(probe, 'a readiness probe');
    const failsAfterMs = (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3) * 1000;
    assert.ok(failsAfterMs <= graceMs, `readiness fails after ${failsAfterMs} ms, within --drain-grace-ms ${graceMs}`);
  }
});
