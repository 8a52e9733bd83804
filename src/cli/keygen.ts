/**
 * `veltair keygen -o PREFIX [--json]`: an Ed25519 key pair for signing bundles. PREFIX.key is the
 * private key (PKCS#8 PEM, created with mode 0600: only its owner may read it), PREFIX.pub the
 * public key (SPKI PEM) that `veltair run --trust` takes. Existing files are never overwritten: a
 * lost private key cannot be recovered, and an overwritten one would orphan every bundle signed
 * with it.
 */
import type { Command } from 'commander';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateSigningKeys } from '../bundle/sign.js';
import { userError } from '../errors.js';
import { printJson, printLine } from '../terminal/output.js';

interface KeygenFlags {
  output?: string;
  json?: boolean;
}

/** Create `path` with `mode`, refusing one that exists (O_EXCL: no window in which another file could appear). */
function writeNew(path: string, text: string, mode: number): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw userError(
        'OUTPUT_EXISTS',
        `${path} already exists; veltair keygen never overwrites a key`,
        'choose another -o PREFIX, or move the old key pair away yourself if you mean to replace it',
      );
    }
    throw userError('FILE_UNWRITABLE', `cannot create ${path} (${code ?? 'error'})`, 'choose a -o PREFIX in a directory you can write to');
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

function keygenAction(f: KeygenFlags): void {
  if (!f.output)
    throw userError(
      'BAD_ARGUMENT',
      'veltair keygen needs -o PREFIX (writes PREFIX.key and PREFIX.pub)',
      'e.g. veltair keygen -o ci-signing',
    );
  const prefix = resolve(f.output);
  const privatePath = `${prefix}.key`,
    publicPath = `${prefix}.pub`;
  const keys = generateSigningKeys();
  writeNew(privatePath, keys.privateKeyPem, 0o600);
  try {
    writeNew(publicPath, keys.publicKeyPem, 0o644);
  } catch (e) {
    // A private key without its public half is of no use to anyone; leave nothing behind.
    rmSync(privatePath, { force: true });
    throw e;
  }
  if (f.json) printJson({ privateKey: privatePath, publicKey: publicPath, keyId: keys.keyId });
  else
    printLine(
      [
        `private key ${privatePath} (mode 0600: keep it secret, e.g. in your CI's secret store)`,
        `public key  ${publicPath} (give it to whoever runs the bundles: veltair run BUNDLE --trust ${publicPath})`,
        `key id      ${keys.keyId}`,
      ].join('\n'),
    );
}

export function registerKeygenCommand(program: Command): void {
  program
    .command('keygen')
    .description('make an Ed25519 key pair for signing bundles (compile --sign PREFIX.key, run --trust PREFIX.pub)')
    .option('-o, --output <prefix>', 'write PREFIX.key (private, mode 0600) and PREFIX.pub (public); existing files are refused')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(keygenAction);
}
