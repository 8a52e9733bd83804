/**
 * Which models a server serves and how: from bundles named on the command line, or a model
 * repository (every sub-directory holding a manifest.json), plus an optional config file
 * (`veltair-serve.json`, schema-checked) with per-model QoS, priority, queue bound and replicas:
 *
 *   { "models": { "resnet50": { "qosMs": 120, "priority": 2, "maxQueue": 32, "replicas": 2,
 *                               "bundle": "resnet50.bundle", "profile": "resnet50.profile.json" } } }
 *
 * Paths in the file are relative to the file. Everything here is read once at start-up; no
 * request ever names a path.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { quoteForMessage, userError } from '../errors.js';

/** A model name is what clients put in URLs: letters, digits, '_', '-', '.'. */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export interface ModelConfig {
  readonly name: string;
  readonly bundle: string;
  /** Latency target per request (ms); undefined: `qosMultiple` × the model's quiet latency. */
  readonly qosMs?: number;
  /** PREMA-style priority (higher first under `prema`); default 1. */
  readonly priority: number;
  /** Requests waiting for this model beyond which the server answers 503; default 64. */
  readonly maxQueue: number;
  /** Sessions (arenas) of the model that may run at once, sharing its weights; default: the core count. */
  readonly replicas?: number;
  /** A `veltair profile` file; default `<bundle>.profile.json` beside the bundle, else measured at start-up. */
  readonly profile?: string;
  /** The .onnx file the bundle was compiled from (the ONNX Runtime baseline serves it); default: as the manifest records it, beside the bundle. */
  readonly model?: string;
}

const MODEL_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    bundle: { type: 'string', minLength: 1 },
    qosMs: { type: 'number', exclusiveMinimum: 0 },
    priority: { type: 'number', exclusiveMinimum: 0 },
    maxQueue: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    replicas: { type: 'integer', minimum: 1, maximum: 1024 },
    profile: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
  },
} as const;

const FILE_SCHEMA = {
  type: 'object',
  required: ['models'],
  additionalProperties: false,
  properties: { models: { type: 'object', propertyNames: { pattern: MODEL_NAME.source }, additionalProperties: MODEL_SCHEMA } },
} as const;

const validateFile = new Ajv({ allErrors: false, strict: true }).compile(FILE_SCHEMA);

type FileModel = {
  bundle?: string;
  qosMs?: number;
  priority?: number;
  maxQueue?: number;
  replicas?: number;
  profile?: string;
  model?: string;
};

export function readConfigFile(path: string): { dir: string; models: Readonly<Record<string, FileModel>> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    const why = (e as { code?: string }).code === 'ENOENT' ? 'does not exist' : `is not JSON (${(e as Error).message.slice(0, 80)})`;
    throw userError('BAD_ARGUMENT', `serve config ${quoteForMessage(path)} ${why}`, 'see `veltair serve --help` for the config format');
  }
  if (!validateFile(parsed)) {
    const err = validateFile.errors![0]!;
    throw userError(
      'BAD_ARGUMENT',
      `serve config ${quoteForMessage(path)}: ${err.instancePath || '(root)'} ${err.message}`,
      'each model may set bundle, qosMs, priority, maxQueue, replicas, profile and model; model names use letters, digits, _ - .',
    );
  }
  return { dir: dirname(resolve(path)), models: (parsed as { models: Record<string, FileModel> }).models };
}

/** A model name from a bundle directory: its base name without `.bundle`. */
export function nameOfBundle(path: string): string {
  const base = basename(resolve(path)).replace(/\.bundle$/, '');
  if (!MODEL_NAME.test(base)) {
    throw userError(
      'BAD_ARGUMENT',
      `bundle ${quoteForMessage(path)}: ${quoteForMessage(base)} is not a model name (letters, digits, _ - .)`,
      'rename the bundle directory, or give the model a name in the config file',
    );
  }
  return base;
}

const isBundle = (dir: string) => existsSync(join(dir, 'manifest.json')) && statSync(dir).isDirectory();

export interface ServeModelsOptions {
  readonly bundles: readonly string[];
  readonly repo?: string;
  readonly config?: string;
}

/** Every model to serve, with its settings (defaults filled in), in a stable order. */
export function resolveModels(o: ServeModelsOptions): ModelConfig[] {
  const file = o.config
    ? readConfigFile(o.config)
    : o.repo && existsSync(join(o.repo, 'veltair-serve.json'))
      ? readConfigFile(join(o.repo, 'veltair-serve.json'))
      : undefined;
  const found = new Map<string, string>();
  const add = (name: string, bundle: string) => {
    if (found.has(name))
      throw userError('BAD_ARGUMENT', `two bundles are both named ${quoteForMessage(name)}`, 'give each model its own name');
    found.set(name, resolve(bundle));
  };
  for (const b of o.bundles) add(nameOfBundle(b), b);
  if (o.repo) {
    if (!existsSync(o.repo) || !statSync(o.repo).isDirectory()) {
      throw userError(
        'FILE_NOT_FOUND',
        `model repository ${quoteForMessage(o.repo)} is not a directory`,
        'pass --repo DIR holding one bundle per model',
      );
    }
    for (const entry of readdirSync(o.repo).sort()) if (isBundle(join(o.repo, entry))) add(nameOfBundle(entry), join(o.repo, entry));
  }
  for (const [name, m] of Object.entries(file?.models ?? {})) {
    if (m.bundle !== undefined && !found.has(name)) add(name, resolve(file!.dir, m.bundle));
  }
  if (found.size === 0) {
    throw userError('BAD_ARGUMENT', 'no model to serve', 'pass bundle directories, or --repo DIR with one bundle per sub-directory');
  }
  return [...found].map(([name, bundle]) => {
    const m = file?.models[name] ?? {};
    return {
      name,
      bundle,
      priority: m.priority ?? 1,
      maxQueue: m.maxQueue ?? 64,
      ...(m.qosMs !== undefined ? { qosMs: m.qosMs } : {}),
      ...(m.replicas !== undefined ? { replicas: m.replicas } : {}),
      ...(m.profile !== undefined ? { profile: resolve(file!.dir, m.profile) } : {}),
      ...(m.model !== undefined ? { model: resolve(file!.dir, m.model) } : {}),
    };
  });
}
