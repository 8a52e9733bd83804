/**
 * `veltair load`'s flags, and the models it loads as the servers describe them: each model's
 * metadata read from its server, its QoS from there unless --qos overrides it, and a seeded request.
 */
import { userError } from '../errors.js';
import { requestFor, type LoadModel, type Metadata } from '../load/generator.js';
import { badArgument } from '../terminal/args.js';

export interface LoadFlags {
  models?: string;
  qps?: string;
  findMax?: boolean;
  duration: string;
  seed: string;
  qos: string[];
  jsonTensors?: boolean;
  rounds: string;
  attainment: string;
  probeLimit: string;
  verify?: boolean;
  attribute?: boolean;
  qpsSweep?: string;
  labels?: string;
  plot?: string;
  plotFrom?: string;
  force?: boolean;
  json?: boolean;
}

function parseNamed(flag: string, text: string): [string, number] {
  const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*)(?:=([0-9]*\.?[0-9]+))?$/.exec(text.trim());
  if (!m) throw badArgument(flag, text, 'is not NAME or NAME=NUMBER', `e.g. ${flag} resnet50=2`);
  return [m[1]!, m[2] === undefined ? 1 : Number(m[2])];
}

export async function loadModels(base: URL, flags: LoadFlags, seed: number): Promise<LoadModel[]> {
  const qos = new Map(flags.qos.map((q) => parseNamed('--qos', q)));
  const out: LoadModel[] = [];
  for (const part of (flags.models ?? '').split(',')) {
    const [name, weight] = parseNamed('--models', part);
    if (!(weight > 0)) throw badArgument('--models', part, 'has a weight that is not positive', 'e.g. --models a=2,b=1');
    let r: Response;
    try {
      r = await fetch(new URL(`/v2/models/${encodeURIComponent(name)}`, base));
    } catch (e) {
      throw userError(
        'BAD_ARGUMENT',
        `no v2 server answers at ${base.origin} (${(e as Error).message})`,
        'start one with veltair serve, then point veltair load at its URL',
      );
    }
    if (r.status === 404) {
      throw userError(
        'BAD_ARGUMENT',
        `the server at ${base.origin} does not serve ${JSON.stringify(name)}`,
        'name a model the server lists',
      );
    }
    const meta = (await r.json()) as Metadata;
    const qosMs = qos.get(name) ?? meta.parameters?.qos_ms;
    if (qosMs === undefined)
      throw userError('BAD_ARGUMENT', `model ${JSON.stringify(name)} has no QoS in its metadata`, `give one with --qos ${name}=MS`);
    out.push({ name, weight, qosMs, ...requestFor(meta, seed + out.length * 101, flags.jsonTensors === true) });
  }
  return out;
}
