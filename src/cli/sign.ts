/**
 * `veltair sign BUNDLE --key KEY [--json]`: sign an existing bundle's manifest (Ed25519), e.g. after
 * `veltair bench --calibrate-proxy` rewrote the manifest (which removes the old signature). The
 * bundle is checked first (schema, every file's size and sha256): only what the manifest describes
 * is signed. manifest.sig is written atomically (src/atomic-file.ts).
 */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../atomic-file.js';
import { readBundle } from '../bundle/read.js';
import { readSigningKey, SIGNATURE_FILE, signatureFor } from '../bundle/sign.js';
import { userError } from '../errors.js';
import { printJson, printLine } from '../terminal/output.js';

interface SignFlags {
  key?: string;
  json?: boolean;
}

const ANY_CPU = { has: () => true } as unknown as ReadonlySet<string>;

async function signAction(bundlePath: string, f: SignFlags): Promise<void> {
  if (!f.key) {
    throw userError(
      'BAD_ARGUMENT',
      'veltair sign needs --key KEY (an Ed25519 private key from veltair keygen)',
      'e.g. veltair sign model.bundle --key ci.key',
    );
  }
  const key = readSigningKey(f.key, '--key');
  // Signing runs no kernel: whether this CPU could run the bundle is not checked here.
  const bundle = await readBundle(bundlePath, { cpuFlags: ANY_CPU });
  const signature = signatureFor(readFileSync(bundle.paths.manifest), key);
  const path = join(bundle.paths.dir, SIGNATURE_FILE);
  writeFileAtomicSync(path, JSON.stringify(signature, null, 2) + '\n', (p, e) =>
    userError(
      'FILE_UNWRITABLE',
      `cannot write ${p} (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      'sign a bundle directory you can write to',
    ),
  );
  if (f.json) printJson({ bundle: bundle.paths.dir, signature: path, keyId: signature.keyId });
  else printLine(`signed ${bundle.paths.dir}: ${SIGNATURE_FILE}, Ed25519 key ${signature.keyId}`);
}

export function registerSignCommand(program: Command): void {
  program
    .command('sign')
    .description("sign an existing bundle's manifest with an Ed25519 private key (after checking every file), into manifest.sig")
    .argument('<bundle>', 'bundle directory written by veltair compile')
    .option('--key <key>', 'Ed25519 private key (PEM, from veltair keygen)')
    .option('--json', 'machine-readable summary on stdout, nothing else there')
    .action(signAction);
}
