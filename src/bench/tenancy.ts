/**
 * Two models sharing the CPU in one process, on disjoint cores: the wall time of running both at
 * once against each alone on its core — close to the slower one alone means they really run in
 * parallel (and what they cost each other: shared L3 and memory bandwidth); the sum would mean
 * they were serialised. Rounds interleave the three arms (A alone, B alone, both) so drift hits
 * all of them; each figure is a median over rounds, with the spread.
 *
 *   npm run build && node dist/src/bench/tenancy.js A.bundle B.bundle [--runs 10] [--rounds 7]
 */
import { loadBundle, type Session } from '../runtime/session.js';
import { seededFloats } from '../random.js';
import { median } from '../stats.js';
import { availableCores } from '../toolchain/cpu.js';
import { machineInfo, machineLine } from '../toolchain/machine-info.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};

function feedsOf(s: Session): Record<string, Float32Array> {
  return Object.fromEntries(
    s.inputs.map((t, i) => [
      t.name,
      seededFloats(
        t.shape.reduce((a, b) => a * b, 1),
        10 + i,
        -1,
        1,
      ),
    ]),
  );
}

async function loop(s: Session, feeds: Record<string, Float32Array>, cores: number[], runs: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await s.run(feeds, { cores });
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const [pathA, pathB] = process.argv.slice(2).filter((a) => !a.startsWith('--') && !/^\d+$/.test(a));
  if (!pathA || !pathB) throw new Error('usage: tenancy.js A.bundle B.bundle [--runs N] [--rounds R]');
  const runs = arg('--runs', 10),
    rounds = arg('--rounds', 7);
  const [c0, c1] = availableCores();
  const a = await loadBundle(pathA),
    b = await loadBundle(pathB);
  const fa = feedsOf(a),
    fb = feedsOf(b);
  await loop(a, fa, [c0!], 2);
  await loop(b, fb, [c1!], 2);
  const alone: { a: number[]; b: number[]; both: number[] } = { a: [], b: [], both: [] };
  for (let r = 0; r < rounds; r++) {
    const arms = [
      async () => alone.a.push(await loop(a, fa, [c0!], runs)),
      async () => alone.b.push(await loop(b, fb, [c1!], runs)),
      async () => {
        const t0 = performance.now();
        await Promise.all([loop(a, fa, [c0!], runs), loop(b, fb, [c1!], runs)]);
        alone.both.push(performance.now() - t0);
      },
    ];
    for (const arm of r % 2 === 0 ? arms : [...arms].reverse()) await arm();
  }
  const m = (xs: number[]) => median(xs);
  const both = m(alone.both),
    slower = Math.max(m(alone.a), m(alone.b)),
    sum = m(alone.a) + m(alone.b);
  const ratios = alone.both.map((x, i) => x / Math.max(alone.a[i]!, alone.b[i]!)).sort((x, y) => x - y);
  console.log(
    `### Two models on disjoint cores in one process (${machineLine(await machineInfo())}, ${new Date().toISOString().slice(0, 10)})\n`,
  );
  console.log(
    `Command: \`node dist/src/bench/tenancy.js ${process.argv.slice(2).join(' ')}\`; ` +
      `${runs} runs per arm per round, ${rounds} rounds, arms interleaved.\n`,
  );
  console.log('| arm | wall ms (median) |\n|---|---|');
  console.log(`| ${a.manifest.model.path} alone on core ${c0} | ${m(alone.a).toFixed(1)} |`);
  console.log(`| ${b.manifest.model.path} alone on core ${c1} | ${m(alone.b).toFixed(1)} |`);
  console.log(`| both at once, each on its core | ${both.toFixed(1)} |`);
  console.log(
    `\nboth / slower alone: ${(both / slower).toFixed(3)} (per round ${ratios[0]!.toFixed(3)}–${ratios[ratios.length - 1]!.toFixed(3)}); ` +
      `both / sum of the two: ${(both / sum).toFixed(3)}`,
  );
  a.close();
  b.close();
}

await main();
