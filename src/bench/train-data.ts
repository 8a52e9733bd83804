/**
 * The data sets of the training benchmark, made on first use into the cache
 * ($VELTAIR_CACHE_DIR/bench-train/…) and reused after: the planted 100k-label set, the real
 * Debian-text word set, WordNet's hypernyms (package wordnet-base) and Debian's package
 * dependencies (apt-cache dumpavail). All are deterministic for a given machine's installed files
 * (each real set's dataset.json holds its source's sha256).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { cacheDir, repoRoot } from '../toolchain/paths.js';

export interface BenchDataset {
  readonly name: string;
  readonly dir: string;
  readonly spec: string;
  readonly train: string;
  readonly test: string;
  /** The command that made it, for RESULTS.md. */
  readonly command: string;
}

export const PLANTED_ARGS = ['--labels', '100000', '--features', '20000', '--train', '100000', '--test', '10000', '--seed', '1'];
export const WORDS_ARGS = ['--max-train', '100000', '--max-test', '10000'];

type DataCommand = 'planted' | 'words' | 'wordnet' | 'debian-packages';

async function make(name: string, sub: DataCommand, args: readonly string[], log: (m: string) => void): Promise<BenchDataset> {
  const dir = join(cacheDir(), 'bench-train', name);
  const command = `veltair data ${sub} -o DIR ${args.join(' ')}`;
  const ds = { name, dir, spec: join(dir, 'spec.json'), train: join(dir, 'train.txt'), test: join(dir, 'test.txt'), command };
  if (existsSync(join(dir, 'dataset.json'))) return ds;
  log(`making the ${name} data set (${command})`);
  await mkdir(dir, { recursive: true });
  await execa(process.execPath, [join(repoRoot(), 'bin', 'veltair'), 'data', sub, '-o', dir, ...args, '--force'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return ds;
}

export function benchDataset(name: string, log: (m: string) => void): Promise<BenchDataset> {
  if (name === 'planted') return make('planted-100k', 'planted', PLANTED_ARGS, log);
  if (name === 'words') return make('words', 'words', WORDS_ARGS, log);
  if (name === 'wordnet') return make('wordnet', 'wordnet', [], log);
  if (name === 'debian-packages') return make('debian-packages', 'debian-packages', [], log);
  throw new Error(`unknown training data set ${name} (planted, words, wordnet, debian-packages)`);
}
