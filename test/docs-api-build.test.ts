/**
 * `npm run docs` (TypeDoc over src/index.ts) builds in any checkout: a tarball with no .git, and a
 * git repository with no remote (`git init` and one commit, like a clone whose remote was removed). Each
 * runs in a temporary copy of the files TypeDoc reads, with this checkout's node_modules linked in.
 * The reference's "Defined in" links point into the checkout, so each must name a file that exists.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';

const root = mkdtempSync(join(tmpdir(), 'veltair-typedoc-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** What TypeDoc reads: the sources, the package and TypeScript configs, its own config. */
const COPIED = ['src', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'typedoc.json'];

function copyCheckout(name: string): string {
  const dir = join(root, name);
  for (const entry of COPIED) cpSync(entry, join(dir, entry), { recursive: true });
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Every source link of the generated pages, resolved against the page that holds it. */
function brokenSourceLinks(dir: string): { links: number; broken: string[] } {
  const api = join(dir, 'docs', 'api');
  let links = 0;
  const broken: string[] = [];
  for (const page of readdirSync(api, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.html'))) {
    const html = readFileSync(join(api, page), 'utf8');
    for (const m of html.matchAll(/Defined in <a href="([^"#]+)(?:#[^"]*)?"/g)) {
      links++;
      if (!existsSync(join(api, dirname(page), m[1]!))) broken.push(`${page}: ${m[1]}`);
    }
  }
  return { links, broken };
}

async function buildDocs(dir: string) {
  const r = await execa('npm', ['run', 'docs'], { cwd: dir, reject: false, stdin: 'ignore', timeout: 120_000 });
  assert.equal(r.exitCode, 0, `npm run docs failed in ${dir}\n${r.stdout}\n${r.stderr}`);
  assert.ok(existsSync(join(dir, 'docs', 'api', 'functions', 'compileModel.html')), 'no page for compileModel');
  const { links, broken } = brokenSourceLinks(dir);
  assert.ok(links > 0, 'the reference has no source links');
  assert.deepEqual(broken, [], 'source links that lead nowhere');
}

test('npm run docs builds in a copy with no .git (a tarball)', async () => {
  await buildDocs(copyCheckout('tarball'));
});

test('npm run docs builds in a git repository with no remote', async () => {
  const dir = copyCheckout('no-remote');
  for (const args of [
    ['init', '-q'],
    ['add', ...COPIED],
    ['-c', 'user.name=docs', '-c', 'user.email=docs@localhost', 'commit', '-qm', 'copy'],
  ]) {
    const git = await execa('git', args, { cwd: dir, reject: false });
    assert.equal(git.exitCode, 0, `git ${args.join(' ')} failed: ${git.stderr}`);
  }
  await buildDocs(dir);
});
