/**
 * A small but complete bundle written by hand (no tuning, no compiler): one relu layer with one
 * raw parameter, dummy kernel bytes. The reader checks files, hashes, paths and schema, not what
 * the kernels do, so this is enough to pin its behaviour quickly.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE_FORMAT_VERSION, manifestText, type Manifest } from '../src/bundle/manifest.js';
import { KERNEL_ABI_VERSION } from '../src/toolchain/abi.js';

const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

export function fakeManifest(files: Manifest['files'], paramSha: string): Manifest {
  return {
    formatVersion: BUNDLE_FORMAT_VERSION,
    compilerVersion: { veltair: '0.1.0', codegen: 1, kernelAbi: KERNEL_ABI_VERSION },
    model: {
      path: 'tiny.onnx',
      sha256: sha('model'),
      opset: 17,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, 4] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1, 4] }],
    },
    target: {
      fingerprint: 't1-0123456789abcdef',
      spec: {
        cpuModel: 'Test CPU',
        isa: { avx512f: true, avx2: true, fma: true },
        cores: 2,
        caches: { l1d: 32768, l2: 1048576, l3: 16777216 },
        cc: 'cc 12',
        cflags: ['-O3', '-march=native'],
      },
      requiredIsa: ['avx2', 'avx512f', 'fma'],
    },
    options: { trials: 2, levels: [0], maxVersions: 2, threads: [1], profileThreads: [], seed: 1 },
    layers: [
      {
        index: 0,
        name: 'relu"; rm -rf / #',
        op: 'add',
        tunable: false,
        workload: null,
        inputs: [0],
        outputs: [1],
        inputShapes: [[1, 4]],
        outputShape: [1, 4],
        dtype: 'float32',
        attrs: {},
        epilogue: [],
        epilogueParams: [],
        params: { B: { file: 'weights/params.bin', offset: 0, length: 16, sha256: paramSha, dtype: 'float32', dims: [4] } },
        versions: [],
      },
    ],
    graphPlan: {
      vectorWidth: 16,
      inputs: [{ name: 'x', value: 0 }],
      outputs: [{ name: 'y', value: 1 }],
      values: [
        { id: 0, name: 'x', shape: [1, 4], dtype: 'float32', layout: 'nchw', bytes: 16, offset: 0 },
        { id: 1, name: 'y', shape: [1, 4], dtype: 'float32', layout: 'nchw', bytes: 16, offset: 64 },
      ],
      steps: [{ index: 0, op: 'layer', layer: 0, layout: 'nchw', inputs: [0], outputs: [1] }],
      arenaBytes: 128,
    },
    files,
  };
}

/** Write the fixture bundle into `dir`; `edit` may change the manifest before it is written. */
export function writeFakeBundle(dir: string, edit: (m: Manifest) => Manifest = (m) => m): Manifest {
  mkdirSync(join(dir, 'kernels'), { recursive: true });
  mkdirSync(join(dir, 'weights'), { recursive: true });
  const contents: Record<string, Uint8Array> = {
    'kernels/kernels.so': Buffer.from('not really an ELF file'),
    'kernels/kernels.c': Buffer.from('/* kernels */\n'),
    'weights/packed.bin': new Uint8Array(0),
    'weights/params.bin': new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer),
  };
  const files: Record<string, { sha256: string; bytes: number }> = {};
  for (const [rel, bytes] of Object.entries(contents)) {
    writeFileSync(join(dir, rel), bytes);
    files[rel] = { sha256: sha(bytes), bytes: bytes.length };
  }
  const m = edit(fakeManifest(files, files['weights/params.bin']!.sha256));
  writeFileSync(join(dir, 'manifest.json'), manifestText(m));
  return m;
}
