/**
 * A `veltair serve` child process under taskset on the given cores, for the commands that measure a
 * live server from outside: the same HTTP front end for every arm, started with the same malloc
 * tunables, answering on a free loopback port that it reports as its first JSON line.
 */
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { MALLOC_KEEP_TUNABLES } from '../toolchain/malloc-tunables.js';
import { repoRoot } from '../toolchain/paths.js';

export interface ServeProcess {
  readonly child: ResultPromise;
  readonly url: string;
}

export async function startServeProcess(args: readonly string[], cores: readonly number[]): Promise<ServeProcess> {
  const bin = join(repoRoot(), 'bin', 'veltair');
  const child = execa(
    'taskset',
    ['-c', cores.join(','), process.execPath, '--single-threaded-gc', bin, 'serve', ...args, '--port', '0', '--json'],
    {
      reject: false,
      stdin: 'ignore',
      buffer: false,
      env: { GLIBC_TUNABLES: MALLOC_KEEP_TUNABLES },
    },
  );
  const url = await new Promise<string>((res, rej) => {
    let out = '',
      err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      try {
        res(String((JSON.parse(out) as { url: string }).url));
      } catch {
        /* partial */
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    void child.then((r) => rej(new Error(`serve ${args.join(' ')} exited ${r.exitCode}: ${err.slice(-600)}`)));
  });
  return { child, url };
}

export async function stopServeProcess(s: ServeProcess): Promise<void> {
  s.child.kill('SIGTERM');
  await s.child;
}
