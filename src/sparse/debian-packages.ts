/**
 * The `debian-packages` data set: the Debian archive's package index as `apt-cache dumpavail`
 * prints it (after `apt-get update`), or any file of the same deb822 stanzas (--input FILE, e.g. a
 * saved dumpavail or /var/lib/dpkg/status). Each package is a sample: its features the words of
 * its short description (`w:word`), its section (`s:games`) and its debtags (`t:role::program`),
 * its labels the packages it depends on (Depends and Pre-Depends; of `a | b` only the first
 * alternative, version constraints, architecture qualifiers and restrictions stripped). Packages
 * without dependencies carry no label and are dropped. Stanzas are sorted by package name (the
 * first stanza of a name wins), so the data set does not depend on the order apt prints them in.
 *
 * Parsing is strict about the deb822 shape (field lines `Name: value`, continuation lines that
 * start with a space or tab, stanzas separated by blank lines) and about dependency names; anything
 * else is an error naming the file and line.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import { userError } from '../errors.js';
import { writeXcDataset, type XcBuildSummary, type XcRecord, type XcSplitOptions } from './xc-build.js';

export interface DebPackage {
  readonly name: string;
  readonly section: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly depends: readonly string[];
  /** 1-based line of the stanza's first field, for messages. */
  readonly line: number;
}

const HINT =
  'the input must be deb822 package stanzas as `apt-cache dumpavail` prints them (run `apt-get update` first), ' +
  'or pass --input FILE holding such stanzas';
const FIELD = /^([A-Za-z0-9][A-Za-z0-9_-]*):(.*)$/;
const NAME = /^[a-z0-9][a-z0-9+.-]*$/;

/** `a (>= 1) | b, c:any [amd64] <!nocheck>` → ['a', 'c']; throws on a name that is not a Debian package name. */
export function dependencyNames(value: string, where: string): string[] {
  const out: string[] = [];
  for (const clause of value.split(',')) {
    if (clause.trim() === '') continue;
    const first = clause
      .split('|')[0]!
      .replace(/\([^)]*\)|\[[^\]]*\]|<[^>]*>/g, ' ')
      .trim()
      .split(/\s+/);
    const name = first[0]!.replace(/:[a-z0-9-]+$/, '');
    if (first.length !== 1 || !NAME.test(name)) {
      throw userError(
        'BAD_DATA',
        `${where}: dependency ${JSON.stringify(clause.trim().slice(0, 60))} is not "package [(version)] [| alternative]"`,
        HINT,
      );
    }
    out.push(name);
  }
  return out;
}

/** deb822 stanzas to packages. Throws BAD_DATA naming file:line on anything that is not deb822 or lacks Package. */
export function parsePackageStanzas(text: string, file: string): DebPackage[] {
  const out: DebPackage[] = [];
  let fields = new Map<string, { value: string; line: number }>();
  let last: string | undefined;
  let start = 0;
  const finish = () => {
    if (fields.size === 0) return;
    const where = `${file}:${start}`;
    const pkg = fields.get('package');
    if (!pkg || !NAME.test(pkg.value.trim())) {
      const what = pkg ? `with Package ${JSON.stringify(pkg.value.trim())} (not a package name)` : 'without a Package field';
      throw userError('BAD_DATA', `${where}: stanza ${what}`, HINT);
    }
    const deps = ['depends', 'pre-depends'].flatMap((f) => {
      const d = fields.get(f);
      return d ? dependencyNames(d.value, `${file}:${d.line}`) : [];
    });
    const name = pkg.value.trim();
    out.push({
      name,
      line: start,
      section: (fields.get('section')?.value ?? '').trim(),
      description: (fields.get('description')?.value ?? '').split('\n')[0]!.trim(),
      tags: (fields.get('tag')?.value ?? '')
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== ''),
      depends: [...new Set(deps)].filter((d) => d !== name),
    });
    fields = new Map();
    last = undefined;
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!.endsWith('\r') ? lines[i]!.slice(0, -1) : lines[i]!;
    const n = i + 1;
    if (l.trim() === '') {
      finish();
      continue;
    }
    if (l[0] === ' ' || l[0] === '\t') {
      if (last === undefined) throw userError('BAD_DATA', `${file}:${n}: continuation line outside a field`, HINT);
      fields.get(last)!.value += '\n' + l.trim();
      continue;
    }
    const m = FIELD.exec(l);
    if (!m) throw userError('BAD_DATA', `${file}:${n}: ${JSON.stringify(l.slice(0, 60))} is not a "Field: value" line`, HINT);
    if (fields.size === 0) start = n;
    last = m[1]!.toLowerCase();
    if (fields.has(last)) throw userError('BAD_DATA', `${file}:${n}: field ${m[1]} appears twice in one stanza`, HINT);
    fields.set(last, { value: m[2]!.trim(), line: n });
  }
  finish();
  return out;
}

const WORD = /[a-z]+(?:'[a-z]+)?/g;

export function packageRecords(packages: readonly DebPackage[]): { records: XcRecord[]; duplicates: number } {
  const byName = new Map<string, DebPackage>();
  for (const p of packages) if (!byName.has(p.name)) byName.set(p.name, p);
  const names = [...byName.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const records = names
    .map((n) => byName.get(n)!)
    .filter((p) => p.depends.length > 0)
    .map((p) => ({
      id: p.name,
      features: [
        ...new Set([
          ...(p.description.toLowerCase().match(WORD) ?? []).map((w) => `w:${w}`),
          ...(p.section ? [`s:${p.section}`] : []),
          ...p.tags.map((t) => `t:${t}`),
        ]),
      ],
      labels: p.depends,
    }));
  return { records, duplicates: packages.length - byName.size };
}

export interface DebianOptions extends XcSplitOptions {
  /** A file of stanzas; undefined: run `apt-cache dumpavail`. */
  readonly input?: string;
}

export interface DebianSummary extends XcBuildSummary {
  readonly packages: number;
  readonly duplicateStanzas: number;
  readonly withoutDependencies: number;
  readonly sourceSha256: string;
  readonly seconds: number;
}

async function dumpavail(): Promise<string> {
  const r = await execa('apt-cache', ['dumpavail'], { reject: false, maxBuffer: 1 << 30, stripFinalNewline: false });
  if (r.failed || r.stdout.trim() === '') {
    throw userError(
      'FILE_NOT_FOUND',
      `apt-cache dumpavail printed no packages${r.stderr ? ` (${String(r.stderr).trim().slice(0, 200)})` : ''}`,
      'run `apt-get update` first (on Debian or Ubuntu), or pass --input FILE holding deb822 package stanzas',
    );
  }
  return r.stdout;
}

export async function buildDebianDataset(o: DebianOptions): Promise<DebianSummary> {
  const t0 = performance.now();
  const file = o.input ?? 'apt-cache dumpavail';
  const text =
    o.input === undefined
      ? await dumpavail()
      : (
          await readFile(o.input).catch((e: NodeJS.ErrnoException) => {
            throw userError(
              e.code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE',
              `cannot read ${o.input} (${e.code ?? String(e)})`,
              'pass --input FILE holding deb822 package stanzas, or leave it out to read `apt-cache dumpavail`',
            );
          })
        ).toString('utf8');
  const sourceSha256 = createHash('sha256').update(text).digest('hex');
  const packages = parsePackageStanzas(text, file);
  const { records, duplicates } = packageRecords(packages);
  const summary = await writeXcDataset(records, {
    kind: 'debian-packages',
    outDir: o.outDir,
    hidden: o.hidden,
    seed: o.seed,
    testFraction: o.testFraction,
    minFeatureCount: o.minFeatureCount,
    minLabelCount: o.minLabelCount,
    source: { input: file, sha256: sourceSha256, bytes: Buffer.byteLength(text), packages: packages.length },
    method: {
      samples: 'one per package name (stanzas sorted by name, the first of a name kept) with at least one dependency',
      sampleFeatures: 'lower-cased short-description words [a-z]+ as w:WORD, the section as s:SECTION, each debtag as t:TAG',
      sampleLabels: 'Depends and Pre-Depends package names: first alternative of a | b, versions, :arch, [arch] and <profile> stripped',
    },
  });
  return {
    ...summary,
    packages: packages.length,
    duplicateStanzas: duplicates,
    withoutDependencies: packages.length - duplicates - records.length,
    sourceSha256,
    seconds: (performance.now() - t0) / 1000,
  };
}
