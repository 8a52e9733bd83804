/** What RESULTS.md records about when and where a benchmark ran: all read from the machine. */
import { loadavg } from 'node:os';
import { execa } from 'execa';

export interface MachineInfo {
  readonly dateUtc: string;
  readonly cpuModel: string;
  readonly cores: number;
  readonly node: string;
  readonly cc: string;
  readonly loadAvg: readonly number[];
}

async function run(cmd: string, args: string[]): Promise<string> {
  try {
    return (await execa(cmd, args, { stdin: 'ignore' })).stdout;
  } catch {
    return '';
  }
}

export async function machineInfo(): Promise<MachineInfo> {
  const lscpu = await run('lscpu', []);
  const field = (k: string) => (new RegExp(`^${k}:\\s*(.+)$`, 'm').exec(lscpu)?.[1] ?? 'unknown').trim();
  return {
    dateUtc: (await run('date', ['-u'])).trim(),
    cpuModel: field('Model name'),
    cores: Number(field('CPU\\(s\\)')) || 0,
    node: process.version,
    cc: (await run('cc', ['--version'])).split('\n')[0] ?? 'unknown',
    loadAvg: loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

export function machineLine(m: MachineInfo): string {
  return `${m.dateUtc} | ${m.cpuModel}, ${m.cores} cores | node ${m.node} | ${m.cc} | load average ${m.loadAvg.join(' ')}`;
}
