/**
 * Headless Chromium for the report tests: Debian's `chromium`, started with an argument array, a
 * throw-away profile, no sandbox (containers), and no network (every request goes to a dead proxy
 * and every host name fails to resolve), killed by execa's timeout if it hangs.
 */
import assert from 'node:assert/strict';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';

const NAMES = ['chromium', 'chromium-browser'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Chromium binary, or a failed assertion saying how to install it (the test must not skip). */
export function findChromium(): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/bin'];
  for (const dir of dirs) for (const name of NAMES) if (executable(join(dir, name))) return join(dir, name);
  assert.fail("chromium is not installed: run `bash .ci/install-deps.sh` (installs Debian's chromium; npm test runs it as pretest)");
}

const ISOLATED = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-extensions',
  '--disable-sync',
  '--disable-component-update',
  '--hide-scrollbars',
  '--proxy-server=127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--enable-logging=stderr',
  '--v=0',
];

export interface ChromiumRun {
  readonly stdout: string;
  readonly stderr: string;
  /** Messages the page logged (errors, CSP violations, uncaught exceptions): `…:CONSOLE…` lines. */
  readonly console: readonly string[];
}

/** Run Chromium once on `file` with the extra `args` (an action: --dump-dom, --screenshot=…). */
export async function runChromium(binary: string, file: string, args: readonly string[]): Promise<ChromiumRun> {
  const profile = mkdtempSync(join(tmpdir(), 'veltair-chromium-'));
  try {
    const r = await execa(binary, [...ISOLATED, `--user-data-dir=${profile}`, ...args, pathToFileURL(file).href], {
      reject: false,
      stdin: 'ignore',
      timeout: 90_000,
      forceKillAfterDelay: 5_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.ok(!r.timedOut, `chromium did not finish within 90 s on ${file}`);
    assert.equal(r.exitCode, 0, `chromium failed (exit ${r.exitCode}):\n${r.stderr.slice(-3000)}`);
    const consoleLines = r.stderr.split('\n').filter((l) => /:CONSOLE[:(\]]/.test(l) || /Uncaught/.test(l));
    return { stdout: r.stdout, stderr: r.stderr, console: consoleLines };
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
