// In-model experiments on consecutive steps and teams (not kept in the runtime), one process,
// runs alternating, medians of the executor's step times. Run under the benchmark lock, after `npm run build`:
//   node bench/teams/in-model.mjs gathers BUNDLE          channel gathers at 1 vs 2 threads inside a 2-thread run
//   node bench/teams/in-model.mjs narrow BUNDLE           every kernel at the thread count its records measured fastest
//   T=1|2 node bench/teams/in-model.mjs ab BUNDLE BUNDLE… several bundles (e.g. compiled with --isa x86-64-v3) side by side
// R (default 300-400) sets the number of runs per arm.
import { loadBundle } from '../../dist/src/runtime/session.js';
import { modelFeeds } from '../../dist/src/compile/feeds.js';
import { median } from '../../dist/src/stats.js';

const [mode, ...bundles] = process.argv.slice(2);
const threads = Number(process.env.T ?? 2);
const open = async (bundle, name, setup = () => {}) => {
  const s = await loadBundle(bundle, { threads });
  s.setLevel(0);
  setup(s);
  const a = modelFeeds(s.manifest.model.inputs);
  s.executor.setProfiling(true);
  return { name, s, feeds: Object.fromEntries(s.manifest.model.inputs.map((t, i) => [t.name, a[i]])), tot: [], k: [], o: [], sel: [] };
};
const measure = (arms, runs, selected = () => false) => {
  for (let i = 0; i < 20; i++) for (const x of arms) x.s.runSync(x.feeds);
  for (let r = 0; r < runs; r++)
    for (const x of arms) {
      x.s.runSync(x.feeds);
      const ns = x.s.executor.stepTimesNs();
      let k = 0,
        o = 0,
        g = 0;
      for (const st of x.s.steps) {
        const ms = ns[st.index] / 1e6;
        if (st.kind === 'kernel') k += ms;
        else o += ms;
        if (selected(st)) g += ms;
      }
      x.tot.push(k + o);
      x.k.push(k);
      x.o.push(o);
      x.sel.push(g);
    }
  for (const x of arms) {
    console.log(
      `T=${threads} ${x.name}: steps ${median(x.tot).toFixed(3)} ms, kernels ${median(x.k).toFixed(3)}, other ${median(x.o).toFixed(3)}` +
        (mode === 'gathers' ? `, gathers ${median(x.sel).toFixed(4)}` : ''),
    );
    x.s.close();
  }
};

if (mode === 'gathers') {
  const gathers = (s) => s.steps.filter((st) => st.kind === 'channelgather');
  const arms = [
    await open(bundles[0], 'gathers at 2 threads'),
    await open(bundles[0], 'gathers at 1 thread', (s) => gathers(s).forEach((st) => s.executor.setThreads(st.index, 1))),
  ];
  measure(arms, Number(process.env.R ?? 400), (st) => st.kind === 'channelgather');
} else if (mode === 'narrow') {
  let narrowed = 0;
  const narrow = (s) =>
    s.tunableLayers.forEach((t) => {
      let best = { v: 0, th: 2, ms: Infinity },
        best2 = Infinity;
      t.versions.forEach((v, i) => {
        for (const th of [1, 2]) {
          const ms = v.latencyByThreadsMs[String(th)];
          if (ms === undefined) continue;
          if (th === 2) best2 = Math.min(best2, ms);
          if (ms < best.ms) best = { v: i, th, ms };
        }
      });
      if (best.th === 1 && best.ms < best2) {
        s.executor.setVersion(t.step, best.v);
        s.executor.setThreads(t.step, 1);
        narrowed++;
      }
    });
  const arms = [await open(bundles[0], 'as tuned for 2 threads'), await open(bundles[0], 'fastest measured count', narrow)];
  console.log(`${narrowed} kernel steps at 1 thread`);
  measure(arms, Number(process.env.R ?? 300));
} else if (mode === 'ab') {
  measure(await Promise.all(bundles.map((b) => open(b, b.split('/').pop()))), Number(process.env.R ?? 300));
} else {
  console.error('usage: node bench/teams/in-model.mjs gathers|narrow|ab BUNDLE…');
  process.exit(1);
}
