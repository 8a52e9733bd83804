/**
 * Docs that cannot rot. Four checks over README.md and every docs/*.md (the last two over
 * bench/RESULTS.md and bench/results/*.md too):
 *
 * 1. Every `veltair …` command the docs show — in any fenced block (synopses, examples, CI
 *    YAML) and in inline code — names a command that exists and only flags that command's
 *    `--help` lists. A renamed or removed flag or command fails here, runnable or not.
 * 2. Every fenced block marked runnable (```sh runnable, the convention docs/README.md
 *    describes) is run, line by line and in order, in one temporary directory per file that
 *    holds `model.onnx` (the tiny fixture model: input `input` [1,3,8,8] → output `output`
 *    [1,10]) and `x.npy` (an input for it). Each command must exit 0, and with --json print
 *    JSON. Compiles and profiles get tiny budgets appended (later flags win), so the whole
 *    file runs in seconds per command on any host.
 * 3. Every source path they name (`src/…` ending in a file name or `/`, globs included) exists in
 *    this checkout, and none names a `.js` file under `src/` (the source is the `.ts`; a command
 *    line runs `dist/src/….js`, which is not a source path).
 * 4. Every link to a heading (`[…](#anchor)`, `[…](file.md#anchor)`) names a heading of its target.
 * Commands run without a shell: a runnable block holds only `veltair` (or `npx veltair`)
 * commands, optionally joined by `&&`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { execa } from 'execa';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/main.js';
import { encodeModel } from '../src/onnx/encode.js';
import { encodeNpy } from '../src/runtime/io-npy.js';
import { BIN, tinyModelSpec } from './compile-fixture.js';

/** Flags appended to every runnable command of these kinds: the smallest real compile and profile. */
const TINY_BUDGET: Readonly<Record<string, readonly string[]>> = {
  compile: ['--trials', '1', '--levels', '0', '--max-versions', '1', '--threads', '1', '--profile-threads', 'none'],
  profile: ['--cores', '1', '--levels', '0', '--rounds', '1', '--runs', '1'],
};
/** Options of the program itself, valid after any command. */
const GLOBAL_FLAGS = new Set(['--help', '--verbose', '--version']);
const COMMAND_TIMEOUT_MS = 300_000;

const root = mkdtempSync(join(tmpdir(), 'veltair-docs-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { VELTAIR_CACHE_DIR: join(root, 'cache') };
const sharedDb = join(root, 'db');

interface DocLine {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}
interface Block {
  readonly file: string;
  readonly line: number;
  readonly info: string;
  readonly lines: readonly DocLine[];
}

function docFiles(): string[] {
  const docs = readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join('docs', f));
  return ['README.md', ...docs];
}

/** A markdown file split into fenced code blocks (with info string and line numbers) and prose lines. */
function parseMarkdown(file: string): { blocks: Block[]; prose: DocLine[] } {
  const blocks: Block[] = [];
  const prose: DocLine[] = [];
  let open: { line: number; info: string; fence: string; body: DocLine[] } | undefined;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const fence = /^\s*(`{3,}|~{3,})(.*)$/.exec(text);
      if (open === undefined) {
        if (fence) open = { line: i + 1, info: fence[2]!.trim(), fence: fence[1]!, body: [] };
        else prose.push({ file, line: i + 1, text });
      } else if (fence && fence[1]!.startsWith(open.fence) && fence[2]!.trim() === '') {
        blocks.push({ file, line: open.line, info: open.info, lines: open.body });
        open = undefined;
      } else {
        open.body.push({ file, line: i + 1, text });
      }
    });
  assert.ok(open === undefined, `${file}:${open?.line}: a fenced block is never closed`);
  return { blocks, prose };
}

const fencedBlocks = (file: string) => parseMarkdown(file).blocks;

const isRunnable = (b: Block) => b.info.split(/\s+/).includes('runnable');

/**
 * Logical lines of a block: a trailing `\` joins the next line, and so does an indented line
 * that continues a synopsis (starting with `[`, `(` or `--`).
 */
function logicalLines(lines: readonly DocLine[]): DocLine[] {
  const out: DocLine[] = [];
  let joinNext = false;
  for (const l of lines) {
    const continues = joinNext || (out.length > 0 && /^\s+(\[|\(|--)/.test(l.text));
    const text = l.text.replace(/\\\s*$/, '');
    if (continues && out.length > 0) {
      const last = out.pop()!;
      out.push({ ...last, text: `${last.text} ${text.trim()}` });
    } else {
      out.push({ ...l, text });
    }
    joinNext = /\\\s*$/.test(l.text);
  }
  return out;
}

/** Inline code spans of a file's prose (outside fenced blocks), one DocLine each. */
function inlineSpans(file: string): DocLine[] {
  return parseMarkdown(file).prose.flatMap((l) => [...l.text.matchAll(/`([^`]+)`/g)].map((m) => ({ ...l, text: m[1]! })));
}

/**
 * Each `veltair WORD …` in a line, up to what ends a shell command: `&&`, `;`, a comment, or a
 * pipe into another program (a synopsis's `a|b` and `( … | --flag)` alternatives do not end it).
 */
function veltairInvocations(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s"'(:$])(?:npx\s+)?veltair\s+(?=[a-z])/g)) {
    const rest = text.slice(m.index! + m[0].length);
    found.push(rest.split(/&&|;|\s#|\s\|\s+(?!-)/)[0]!.trim());
  }
  return found;
}

/** The CLI's own command tree, read in-process: what `--help` prints is built from the same options. */
const program = buildProgram();

/** The command an invocation names (`db merge`, `zoo build`, `compile`) and the flags it takes. */
function resolveCommand(invocation: string): { words: string[]; flags: Set<string> } | { error: string } {
  const tokens = invocation.split(/\s+/);
  const find = (parent: Command, name: string | undefined) =>
    parent.commands.find((c) => name !== undefined && (c.name() === name || c.aliases().includes(name)));
  const top = find(program, tokens[0]);
  if (top === undefined) return { error: `no command \`veltair ${tokens[0]}\`` };
  let cmd = top;
  const words = [top.name()];
  if (top.commands.length > 0) {
    const sub = find(top, tokens[1]);
    if (sub === undefined) {
      if (tokens[1] !== undefined && /^[a-z][\w-]*$/.test(tokens[1])) return { error: `no command \`veltair ${tokens[0]} ${tokens[1]}\`` };
    } else {
      cmd = sub;
      words.push(sub.name());
    }
  }
  const flags = new Set([...GLOBAL_FLAGS, ...cmd.options.flatMap((o) => [o.long, o.short]).filter((f): f is string => f !== undefined)]);
  return { words, flags };
}

function flagsOf(invocation: string): string[] {
  return [...invocation.matchAll(/(?<![\w-])--[a-z][\w-]*/g)].map((m) => m[0]);
}

test('every veltair command in README.md and docs/ exists and names only flags its --help lists', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const file of docFiles()) {
    const candidates = [...fencedBlocks(file).flatMap((b) => logicalLines(b.lines)), ...inlineSpans(file)];
    for (const l of candidates) {
      for (const inv of veltairInvocations(l.text)) {
        const cmd = resolveCommand(inv);
        if ('error' in cmd) {
          problems.push(`${l.file}:${l.line}: ${cmd.error} (${inv})`);
          continue;
        }
        checked++;
        for (const flag of flagsOf(inv)) {
          if (!cmd.flags.has(flag)) {
            problems.push(`${l.file}:${l.line}: \`veltair ${cmd.words.join(' ')}\` has no ${flag} (its --help does not list it)`);
          }
        }
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(checked >= 50, `only ${checked} veltair commands found in the docs: is the extraction broken?`);
});

/**
 * Every `src/…` path a file names, with its line: repository-relative (`src/x.ts`) or relative to
 * the file (`../src/x.ts`), not the tail of a longer path (`dist/src/x.js`, `native-kernels/src/`).
 * A path ends at a character no file name here uses; a trailing `.` or `,` is the sentence's.
 */
function sourcePaths(file: string): DocLine[] {
  const out: DocLine[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      for (const m of text.matchAll(/(?<![\w./-])((?:\.\.\/)*src\/[\w./*{},-]*)/g)) {
        const path = m[1]!.replace(/[.,]+$/, '');
        const start = path.startsWith('../') ? normalize(join(dirname(file), path)) : path;
        out.push({ file, line: i + 1, text: start });
      }
    });
  return out;
}

/** A glob (`*` within a name, `{a,b}` alternatives) as a regular expression over whole paths. */
function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^$()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*')
    .replace(/\{([^}]*)\}/g, (_, alts: string) => `(?:${alts.split(',').join('|')})`);
  return new RegExp(`^${body}$`);
}

/** Whether a named path exists: a file, a folder (`src/x/`) or a glob with at least one match. */
function pathExists(path: string): boolean {
  if (!/[*{]/.test(path)) return existsSync(path);
  const fixed = path.slice(0, path.search(/[*{]/));
  const dir = fixed.slice(0, fixed.lastIndexOf('/') + 1);
  if (!existsSync(dir)) return false;
  const re = globRegExp(path);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).some((f) => re.test(join(dir, f)));
}

/** The docs and the results: README.md, docs/*.md, bench/RESULTS.md and the detail pages it links, bench/results/*.md. */
function resultFiles(): string[] {
  const details = readdirSync('bench/results')
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join('bench/results', f));
  return [...docFiles(), 'bench/RESULTS.md', ...details];
}

/** GitHub's anchors of a markdown file's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const l of parseMarkdown(file).prose) {
    const m = /^#{1,6}\s+(.*)$/.exec(l.text);
    if (!m) continue;
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

test('every #anchor link of README.md, docs/ and the results names a heading of its target file', () => {
  const broken: string[] = [];
  for (const file of resultFiles()) {
    parseMarkdown(file).prose.forEach(({ line, text }) => {
      for (const m of text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        const target = m[1] === '' ? file : normalize(join(dirname(file), m[1]!));
        if (!existsSync(target) || !headingAnchors(target).has(m[2]!)) broken.push(`${file}:${line} → ${m[1]}#${m[2]}`);
      }
    });
  }
  assert.deepEqual(broken, [], `links to headings that do not exist:\n${broken.join('\n')}`);
});

test('every src/ path README.md, docs/ and the results name exists, and none names a .js source', () => {
  const missing: string[] = [];
  let checked = 0;
  for (const file of resultFiles()) {
    for (const { line, text: path } of sourcePaths(file)) {
      if (path.endsWith('.js')) {
        missing.push(`${file}:${line} → ${path} (a .js under src/: name the .ts source, or the command \`node dist/${path}\`)`);
        continue;
      }
      if (!/(\.(ts|c|h|py|json)|\/)$/.test(path) && !/[*{]/.test(path)) continue;
      checked++;
      if (!pathExists(path)) missing.push(`${file}:${line} → ${path}`);
    }
  }
  assert.deepEqual(missing, [], `paths the docs name that this checkout does not have:\n${missing.join('\n')}`);
  assert.ok(checked >= 30, `only ${checked} src/ paths found in the docs: is the extraction broken?`);
});

/** Shell-like words of one command: whitespace-separated, '…' and "…" quoted. No expansion. */
function words(command: string): string[] {
  const out: string[] = [];
  for (const m of command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3]!);
  return out;
}

function stripComment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) return text.slice(0, i);
  }
  return text;
}

/** The argv (after `veltair`) of every command in a file's runnable blocks, in order. */
function runnableCommands(file: string): { at: DocLine; argv: string[] }[] {
  const cmds: { at: DocLine; argv: string[] }[] = [];
  for (const block of fencedBlocks(file).filter(isRunnable)) {
    for (const l of logicalLines(block.lines)) {
      const text = stripComment(l.text).trim();
      if (text === '') continue;
      for (const part of text.split('&&')) {
        const w = words(part.trim());
        const start = w[0] === 'npx' ? 1 : 0;
        assert.equal(w[start], 'veltair', `${l.file}:${l.line}: a runnable block holds only veltair commands, not: ${part.trim()}`);
        cmds.push({ at: l, argv: w.slice(start + 1) });
      }
    }
  }
  return cmds;
}

function withBudget(argv: readonly string[]): string[] {
  const budget = TINY_BUDGET[argv[0]!] ?? [];
  const db = argv[0] === 'compile' && !argv.includes('--db') ? ['--db', sharedDb] : [];
  return [...argv, ...budget, ...db];
}

function assertJson(stdout: string, where: string) {
  const text = stdout.trim();
  try {
    JSON.parse(text);
  } catch {
    for (const line of text.split('\n'))
      assert.doesNotThrow(() => JSON.parse(line), `${where}: --json printed something that is not JSON: ${line}`);
  }
}

const runnableFiles = docFiles().filter((f) => fencedBlocks(f).some(isRunnable));

before(() => {
  mkdirSync(sharedDb, { recursive: true });
});

test('README.md and docs/ mark runnable examples, the README among them', () => {
  assert.ok(runnableFiles.includes('README.md'), 'README.md has no ```sh runnable block');
  const total = runnableFiles.reduce((n, f) => n + runnableCommands(f).length, 0);
  assert.ok(runnableFiles.length >= 5 && total >= 15, `only ${total} runnable commands in ${runnableFiles.length} files`);
});

for (const file of runnableFiles) {
  test(`the runnable commands of ${file} run on the fixture model`, async () => {
    const dir = mkdtempSync(join(root, 'doc-'));
    writeFileSync(join(dir, 'model.onnx'), encodeModel(tinyModelSpec()));
    const x = Float32Array.from({ length: 3 * 8 * 8 }, (_, i) => Math.cos(i * 0.21));
    writeFileSync(join(dir, 'x.npy'), encodeNpy({ dtype: 'float32', shape: [1, 3, 8, 8], data: x }));
    for (const { at, argv } of runnableCommands(file)) {
      const where = `${at.file}:${at.line}: veltair ${argv.join(' ')}`;
      const r = await execa(process.execPath, [BIN, ...withBudget(argv)], {
        cwd: dir,
        reject: false,
        stdin: 'ignore',
        env,
        timeout: COMMAND_TIMEOUT_MS,
      });
      assert.equal(r.exitCode, 0, `${where}\nexit ${r.exitCode}${r.timedOut ? ' (timed out)' : ''}\n${r.stderr}`);
      if (argv.includes('--json')) assertJson(r.stdout, where);
    }
  });
}
