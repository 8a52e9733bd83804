import { requestFor } from './dist/src/serve/load.js';
for (const port of [18090]) for (const m of ['mobilenet_v2', 'resnet50']) {
  const meta = await (await fetch(`http://127.0.0.1:${port}/v2/models/${m}`)).json();
  const { body, headers } = requestFor(meta, 1, false);
  const ts = [];
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    const r = await fetch(`http://127.0.0.1:${port}/v2/models/${m}/infer`, { method: 'POST', headers, body });
    await r.arrayBuffer();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  console.log(port, m, ts.map((t) => t.toFixed(1)).join(' '));
}
