/**
 * Where node_api.h lives for the running Node (the official layout: <prefix>/include/node), for
 * every N-API addon veltair builds (the runtime's and the sparse trainer's).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userError } from '../errors.js';

export function nodeIncludeDir(): string {
  const candidates = [join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node'];
  const found = candidates.find((d) => existsSync(join(d, 'node_api.h')));
  if (found === undefined) {
    throw userError(
      'NO_COMPILER',
      `node_api.h was not found (looked in ${candidates.join(', ')})`,
      'install the Node.js development headers (e.g. `apt-get install libnode-dev` or a Node.js tarball, which ships include/node)',
    );
  }
  return found;
}
