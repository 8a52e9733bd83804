/**
 * Reading a bundle: nothing in it is trusted until it has been checked, in this order —
 *  0. with trusted keys: manifest.json's bytes carry a valid Ed25519 signature by one of them
 *     (sign.ts; UNSIGNED_BUNDLE / BAD_SIGNATURE otherwise), and those very bytes are parsed;
 *  1. manifest.json parses and its format major version is this veltair's (a newer or older major
 *     is refused with a message saying which);
 *  2. it matches the JSON Schema, and its kernels speak this veltair's kernel ABI;
 *  3. every file it names stays inside the bundle directory (plain relative names, no '..', no
 *     absolute paths, no symlink leading out) and is a regular file;
 *  4. every file's size and sha256 match the manifest, and every blob reference lies inside its file;
 *  5. this machine has every instruction-set extension the kernels were built for (a clear
 *     TARGET_MISMATCH instead of a SIGILL in the middle of a request).
 * The runtime calls readBundle and then maps the files it returns.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { createReadStream, lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { userError, quoteForMessage } from '../errors.js';
import { KERNEL_ABI_VERSION } from '../toolchain/abi.js';
import { cpuInfo } from '../toolchain/cpu.js';
import { BUNDLE_FILES, BUNDLE_FORMAT_MAJOR, type BlobRef, type Manifest } from './manifest.js';
import { assertManifestSchema, BUNDLE_PATH_PATTERN } from './schema.js';
import { verifyManifestSignature } from './sign.js';

export interface BundlePaths {
  /** Absolute, symlink-free paths of the bundle directory and its well-known files. */
  readonly dir: string;
  readonly manifest: string;
  readonly kernels: string;
  readonly kernelsSource: string;
  readonly packedWeights: string;
  readonly params: string;
}

export interface LoadedBundle {
  readonly manifest: Manifest;
  readonly paths: BundlePaths;
  /** Non-fatal findings (e.g. built on another CPU model: the profiles may not transfer). */
  readonly warnings: readonly string[];
  /** Key id of the trusted key whose signature was verified (only when trusted keys were given). */
  readonly signedBy?: string;
}

export interface ReadOptions {
  /** This machine's cpuinfo flags (tests pass a fake machine); default /proc/cpuinfo. */
  readonly cpuFlags?: ReadonlySet<string>;
  readonly cpuModel?: string;
  /** Skip hashing the files (trusted caller, e.g. the writer's own check). Default false; ignored with trustedKeys. */
  readonly skipHashes?: boolean;
  /**
   * Ed25519 public keys (sign.ts readTrustedKey): when given, the bundle must carry a valid
   * signature by one of them, and every file is hashed against the signed manifest.
   */
  readonly trustedKeys?: readonly KeyObject[];
}

const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
const REQUIRED_FILES = [BUNDLE_FILES.kernels, BUNDLE_FILES.packedWeights, BUNDLE_FILES.params] as const;

const bad = (message: string, hint = 'the bundle is corrupt or was modified; recompile it with veltair compile') =>
  userError('BAD_BUNDLE', message, hint);

function readManifestJson(dir: string, trustedKeys: readonly KeyObject[] | undefined): { value: unknown; signedBy?: string } {
  const path = join(dir, BUNDLE_FILES.manifest);
  let info;
  try {
    info = lstatSync(path);
  } catch {
    throw bad(`${dir} is not a veltair bundle: it has no ${BUNDLE_FILES.manifest}`, 'pass the directory veltair compile -o wrote');
  }
  if (!info.isFile()) throw bad(`${path} is not a regular file`);
  if (info.size > MAX_MANIFEST_BYTES) throw bad(`${path} is ${info.size} bytes, more than a manifest can be`);
  const bytes = readFileSync(path);
  const signedBy = trustedKeys ? verifyManifestSignature(dir, bytes, trustedKeys) : undefined;
  try {
    return { value: JSON.parse(bytes.toString('utf8')), ...(signedBy ? { signedBy } : {}) };
  } catch (e) {
    throw bad(`${path} is not valid JSON (${(e as Error).message.split('\n')[0]})`);
  }
}

function checkFormatVersion(value: unknown, where: string): void {
  const v = (value as { formatVersion?: unknown } | null)?.formatVersion;
  const m = typeof v === 'string' ? /^(\d+)\.(\d+)\.(\d+)$/.exec(v) : null;
  if (!m) throw bad(`${where} has no valid formatVersion (${quoteForMessage(String(v))})`);
  const major = Number(m[1]);
  if (major > BUNDLE_FORMAT_MAJOR) {
    throw bad(
      `bundle format ${v} is newer than this veltair (${BUNDLE_FORMAT_MAJOR}.x); recompile or upgrade`,
      'recompile the model with this veltair, or upgrade veltair to read the bundle',
    );
  }
  if (major < BUNDLE_FORMAT_MAJOR) {
    throw bad(
      `bundle format ${v} is older than this veltair (${BUNDLE_FORMAT_MAJOR}.x); recompile it`,
      'recompile the model with this veltair (veltair compile MODEL.onnx -o OUT --force)',
    );
  }
}

/** The absolute path of `rel` inside `root`, refusing anything that could leave it. */
export function resolveInside(root: string, rel: string): string {
  if (!new RegExp(BUNDLE_PATH_PATTERN).test(rel) || isAbsolute(rel) || rel.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    throw bad(`bundle file path ${quoteForMessage(rel)} is not a plain relative path inside the bundle`);
  }
  const abs = resolve(root, rel);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    throw bad(`bundle file ${rel} is missing`);
  }
  const back = relative(root, real);
  if (back === '' || back.startsWith('..') || isAbsolute(back) || back.split(sep)[0] === '..') {
    throw bad(`bundle file ${rel} leads outside the bundle directory (to ${real})`);
  }
  if (!statSync(real).isFile()) throw bad(`bundle file ${rel} is not a regular file`);
  return real;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function blobRefs(m: Manifest): { where: string; ref: BlobRef }[] {
  const out: { where: string; ref: BlobRef }[] = [];
  for (const l of m.layers) {
    for (const [name, p] of Object.entries(l.params)) out.push({ where: `layer ${l.index} param ${name}`, ref: p });
    for (const v of l.versions)
      if (v.packedWeight) out.push({ where: `layer ${l.index} version ${v.id.slice(0, 12)}`, ref: v.packedWeight });
  }
  return out;
}

function checkTarget(m: Manifest, o: ReadOptions): string[] {
  const flags = o.cpuFlags ?? cpuInfo().flags;
  const missing = m.target.requiredIsa.filter((f) => !flags.has(f));
  if (missing.length > 0) {
    throw userError(
      'TARGET_MISMATCH',
      `this bundle's kernels need ${missing.join(', ')}, which this CPU lacks (built on ${m.target.spec.cpuModel})`,
      'recompile the model on this machine (veltair compile), or run the bundle on a machine like the one it was built on',
    );
  }
  const model = o.cpuModel ?? cpuInfo().model;
  return model === m.target.spec.cpuModel
    ? []
    : [`bundle was tuned on ${m.target.spec.cpuModel}, this is ${model}: its latency profiles may not transfer`];
}

export async function readBundle(dirPath: string, o: ReadOptions = {}): Promise<LoadedBundle> {
  let dir: string;
  try {
    dir = realpathSync(resolve(dirPath));
  } catch {
    throw userError('FILE_NOT_FOUND', `bundle ${dirPath} does not exist`, 'pass the directory veltair compile -o wrote');
  }
  if (!statSync(dir).isDirectory()) throw bad(`${dirPath} is not a bundle directory`, 'pass the directory veltair compile -o wrote');
  const manifestPath = join(dir, BUNDLE_FILES.manifest);
  const { value, signedBy } = readManifestJson(dir, o.trustedKeys);
  const skipHashes = o.skipHashes === true && o.trustedKeys === undefined;
  checkFormatVersion(value, manifestPath);
  assertManifestSchema(value, manifestPath);
  const manifest = value as Manifest;
  if (manifest.compilerVersion.kernelAbi !== KERNEL_ABI_VERSION) {
    throw bad(
      `${manifestPath}: its kernels use kernel ABI ${manifest.compilerVersion.kernelAbi}, this veltair calls ABI ${KERNEL_ABI_VERSION}`,
      'recompile the model with this veltair (veltair compile MODEL.onnx -o OUT --force)',
    );
  }

  for (const f of REQUIRED_FILES) if (!(f in manifest.files)) throw bad(`${manifestPath} does not list ${f}`);
  const sizes = new Map<string, number>();
  for (const [rel, want] of Object.entries(manifest.files)) {
    const abs = resolveInside(dir, rel);
    const size = statSync(abs).size;
    if (size !== want.bytes) throw bad(`bundle file ${rel} is ${size} bytes, the manifest says ${want.bytes} (truncated or modified)`);
    if (!skipHashes && (await sha256Of(abs)) !== want.sha256)
      throw bad(`bundle file ${rel} does not match its sha256 in the manifest (tampered or corrupt)`);
    sizes.set(rel, size);
  }
  for (const { where, ref } of blobRefs(manifest)) {
    const size = sizes.get(ref.file);
    if (size === undefined) throw bad(`${where} refers to ${quoteForMessage(ref.file)}, which the manifest does not list`);
    if (ref.offset + ref.length > size) throw bad(`${where} lies outside ${ref.file} (${ref.offset}+${ref.length} > ${size})`);
  }
  const warnings = checkTarget(manifest, o);
  const at = (rel: string) => join(dir, rel);
  return {
    manifest,
    paths: {
      dir,
      manifest: manifestPath,
      kernels: at(BUNDLE_FILES.kernels),
      kernelsSource: at(BUNDLE_FILES.kernelsSource),
      packedWeights: at(BUNDLE_FILES.packedWeights),
      params: at(BUNDLE_FILES.params),
    },
    warnings,
    ...(signedBy ? { signedBy } : {}),
  };
}
