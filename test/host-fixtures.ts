/**
 * The host types veltair has run on, as fixtures (test/fixtures/hosts/*.json): each one's cpuinfo
 * text, caches, cores and compiler, what the ISA probe answers there for flags its cpuinfo hides,
 * and what veltair must conclude (target fingerprint, portable levels, vector widths). Tests run
 * the toolchain's parsers on every fixture, so a CPU fact is checked on every host type from any host.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCpuInfo, settleCpuInfo, type CpuInfo } from '../src/toolchain/cpu.js';
import type { IsaProber } from '../src/toolchain/isa-probe.js';
import type { HostFacts } from '../src/toolchain/target.js';

export interface HostFixture {
  readonly name: string;
  /** Where the facts come from: captured on the host, or reconstructed (and from what). */
  readonly provenance: string;
  readonly cpuinfo: string;
  readonly caches: { readonly l1d: number; readonly l2: number; readonly l3: number };
  readonly cores: number;
  readonly cc: string;
  /** What isa-probe.c answers on that host for a flag its cpuinfo does not list. */
  readonly probe: Readonly<Record<string, boolean>>;
  readonly expect: {
    readonly fingerprint: string;
    readonly levels: readonly string[];
    readonly probed: readonly string[];
    readonly vectorWidths: readonly number[];
  };
}

const DIR = join(process.cwd(), 'test', 'fixtures', 'hosts');

export function hostFixtures(): HostFixture[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as HostFixture);
}

/** The fixture's probe: its recorded answers, and nothing for a flag it has none for. */
export function fixtureProber(h: Pick<HostFixture, 'probe'>): IsaProber {
  return (flags) => Object.fromEntries(flags.filter((f) => f in h.probe).map((f) => [f, h.probe[f]!]));
}

/** The fixture's CPU as veltair reads it: its cpuinfo, settled by its probe. */
export function fixtureCpu(h: HostFixture, prober: IsaProber = fixtureProber(h)): CpuInfo {
  return settleCpuInfo(parseCpuInfo(h.cpuinfo), prober);
}

export function fixtureFacts(h: HostFixture, cpu: CpuInfo = fixtureCpu(h)): HostFacts {
  return { cpu, caches: h.caches, cores: h.cores, cc: h.cc };
}
