// The config file's shape. Every object is strict: a misspelt key is an
// error, not a silently ignored setting. temporal and kubernetes always
// exist after parsing (with defaults); capability sections exist only when
// configured (see sections.ts).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { loadClientConfigProfile, type ClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { z } from 'zod';
import { preview } from '../checks/preview.ts';
import { ADDRESS_MAX, boundedName, CONTEXT_MAX, cut, lengthFirst, NAMESPACE_MAX, PATH_MAX, taskQueueSchema } from './bounds.ts';
import { dns1123LabelProblem, kubeNameSchema } from './kube-names.ts';
import { sections, type SectionName } from './sections.ts';
import { modeSchema } from './mode.ts';
import { nodeRepairProblems } from './node-repair.ts';

// host:port, the host a name, an IPv4 address or a bracketed IPv6 address.
const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):(\d+)$/;

// Its length first: a long address is refused for being long, not for its characters.
const addressSchema = lengthFirst(z.string(), ADDRESS_MAX, 'a host name of at most 253, ":" and a port').superRefine((address, ctx) => {
  const match = hostPort.exec(address);
  if (!match) {
    ctx.addIssue({
      code: 'custom',
      input: address,
      message: 'must be host:port without a scheme, like localhost:7233 or my-namespace.a1b2c.tmprl.cloud:7233',
    });
  } else if (Number(match[3]) < 1 || Number(match[3]) > 65535) {
    ctx.addIssue({ code: 'custom', input: address, message: 'port must be from 1 to 65535' });
  }
});

const pathSchema = lengthFirst(z.string().min(1), PATH_MAX, "the system's longest path");

export const tlsOptionsSchema = z
  .strictObject({
    serverName: boundedName(253).optional(),
    serverRootCACertPath: pathSchema.optional(),
    clientCertPath: pathSchema.optional(),
    clientKeyPath: pathSchema.optional(),
  })
  .superRefine((tls, ctx) => {
    // mTLS needs both halves; one alone is a half-finished edit, not a choice.
    if (tls.clientCertPath && !tls.clientKeyPath) {
      ctx.addIssue({ code: 'custom', path: ['clientKeyPath'], message: 'required when clientCertPath is set' });
    }
    if (tls.clientKeyPath && !tls.clientCertPath) {
      ctx.addIssue({ code: 'custom', path: ['clientCertPath'], message: 'required when clientKeyPath is set' });
    }
  });

const envVarName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The server's limit on deployment names and build ids (255 characters); a deployment name has no ".". */
const versionPart = z.string().min(1).max(255);

/** `temporal.deployment`: the worker polls as one version of a Worker Deployment. */
export const deploymentSchema = z.strictObject({
  name: versionPart.refine((v) => !v.includes('.'), 'must not contain "."').default('tend'),
  /** Absent: derived from the fingerprint of the worker's code, the same on every replica. */
  buildId: versionPart.optional(),
  promote: z.enum(['newest', 'never'], { error: 'must be newest (make this version current unless a newer one is) or never' }).default('newest'),
});

/**
 * The config file's `temporal` section as written. address and namespace have no default here:
 * where the file is silent they come from the environment or a temporal CLI profile
 * (resolveTemporal), and only then from tend's defaults.
 */
export const temporalFileSchema = z
  .strictObject({
    address: addressSchema.optional(),
    namespace: boundedName(NAMESPACE_MAX).optional(),
    taskQueue: taskQueueSchema.default('tend'),
    /** true: TLS with the system's root certificates; a mapping: TLS with these files. */
    tls: z
      .union([z.boolean(), tlsOptionsSchema], {
        error: 'must be true, false, or a mapping of serverName, serverRootCACertPath, clientCertPath and clientKeyPath',
      })
      .optional(),
    apiKey: z.string().min(1).optional(),
    /** The environment variable holding the API key, so that the key need not sit in the file. */
    apiKeyEnv: lengthFirst(z.string(), NAMESPACE_MAX)
      .regex(envVarName, 'must be an environment variable name: letters, digits and "_", not starting with a digit')
      .optional(),
    /** Worker Deployment Versioning for the worker (docs/upgrading.md); absent: unversioned. */
    deployment: deploymentSchema.optional(),
  })
  .transform((temporal, ctx) => {
    if (temporal.apiKeyEnv === undefined) return temporal;
    if (temporal.apiKey !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['apiKeyEnv'], message: 'set apiKey or apiKeyEnv, not both' });
      return z.NEVER;
    }
    // Read at load time so that a missing key refuses start-up like any other config error.
    const apiKey = process.env[temporal.apiKeyEnv];
    if (!apiKey) {
      ctx.addIssue({
        code: 'custom',
        path: ['apiKeyEnv'],
        message: `names environment variable ${temporal.apiKeyEnv}, which is ${apiKey === undefined ? 'not set' : 'empty'}`,
      });
      return z.NEVER;
    }
    return { ...temporal, apiKey };
  });

/** The file's section, resolved against TEMPORAL_* variables and the temporal CLI's profile (resolveTemporal). */
export const temporalSchema = temporalFileSchema.transform((file, ctx) => {
  const resolved = resolveTemporal(file, process.env);
  if ('problems' in resolved) {
    for (const p of resolved.problems) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
    return z.NEVER;
  }
  return resolved.temporal;
});

// ---------------------------------------------------------------------------------------------
// Resolving the Temporal connection. Each setting is taken from the first of these that gives it,
// the temporal CLI's order (flag, environment, profile) with the config file where a flag would be:
//   1. the config file's `temporal` section;
//   2. the environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*;
//   3. the temporal CLI profile TEMPORAL_PROFILE (else "default") of TEMPORAL_CONFIG_FILE (else
//      $XDG_CONFIG_HOME/temporalio/temporal.toml, else ~/.config/temporalio/temporal.toml);
//   4. tend's defaults: localhost:7233, namespace default, no API key, no TLS.
// TLS: a `tls` written in the file is the whole TLS setting; otherwise each TLS field comes from the
// environment, else from the profile (as the temporal CLI merges them). docs/deploy.md says the same.
// ---------------------------------------------------------------------------------------------

/** TLS as resolved: the file's form, or PEM text given inline (TEMPORAL_TLS_*_DATA, a profile's *_data). */
export interface ResolvedTls extends TlsOptions {
  clientCertData?: string;
  clientKeyData?: string;
  serverRootCAData?: string;
}

export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: boolean | ResolvedTls;
  apiKey?: string;
  apiKeyEnv?: string;
  deployment?: DeploymentConfig;
}

/** Where each resolved setting came from, in words for errors: "TEMPORAL_ADDRESS", "temporal.address", "profile ...". */
export interface TemporalOrigins {
  address: string;
  namespace: string;
  apiKey?: string;
  /** Per TLS field (serverName, clientCertPath, ...), or `tls` for the whole setting. */
  tls: Record<string, string>;
}

const origins = new WeakMap<object, TemporalOrigins>();

/** Where a resolved `temporal` setting's values came from (undefined for one built by hand). */
export function temporalOrigins(temporal: object): TemporalOrigins | undefined {
  return origins.get(temporal);
}

export interface TemporalProblem {
  path: (string | number)[];
  message: string;
}

/** The temporal CLI's config file: TEMPORAL_CONFIG_FILE, else the default path (undefined without a home). */
export function temporalConfigFile(env: NodeJS.ProcessEnv): { path?: string; explicit: boolean } {
  if (env.TEMPORAL_CONFIG_FILE) return { path: env.TEMPORAL_CONFIG_FILE, explicit: true };
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && xdg.startsWith('/') ? xdg : env.HOME ? join(env.HOME, '.config') : xdg === undefined ? join(homedir(), '.config') : undefined;
  return { path: base && join(base, 'temporalio', 'temporal.toml'), explicit: false };
}

const envTls: Record<keyof ClientConfigTLS, [string, string?]> = {
  disabled: ['TEMPORAL_TLS'],
  serverName: ['TEMPORAL_TLS_SERVER_NAME'],
  clientCert: ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_DATA'],
  clientKey: ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_DATA'],
  serverCACert: ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_DATA'],
};
const profileTls: Record<keyof ClientConfigTLS, [string, string?]> = {
  disabled: ['tls.disabled'],
  serverName: ['tls.server_name'],
  clientCert: ['tls.client_cert_path', 'tls.client_cert_data'],
  clientKey: ['tls.client_key_path', 'tls.client_key_data'],
  serverCACert: ['tls.server_ca_cert_path', 'tls.server_ca_cert_data'],
};
/** tend's names for the TLS fields, path and inline form. */
const tendTls: Record<Exclude<keyof ClientConfigTLS, 'disabled'>, [keyof ResolvedTls, (keyof ResolvedTls)?]> = {
  serverName: ['serverName'],
  clientCert: ['clientCertPath', 'clientCertData'],
  clientKey: ['clientKeyPath', 'clientKeyData'],
  serverCACert: ['serverRootCACertPath', 'serverRootCAData'],
};

/** envconfig's messages name TOML keys; say which variable or file they are about. */
function envconfigProblem(err: unknown, where: string): string {
  const message = (err as Error)?.message ?? String(err);
  const both = /Cannot specify both (\w+)_path and \w+_data/.exec(message);
  if (both) return `${where}: ${both[1]}_path and ${both[1]}_data are both set; set one of them`;
  return `${where}: ${message}`;
}

/** The values Go's strconv.ParseBool takes, as the temporal CLI reads its boolean variables. */
const GO_TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'];

/**
 * A boolean TEMPORAL_* variable as the temporal CLI reads it: unset or empty is undefined, and a
 * value it would refuse is a problem (the SDK's reader takes anything but "1" and "true" as false,
 * so TEMPORAL_TLS=yes would turn TLS off without a word).
 */
function envBool(env: NodeJS.ProcessEnv, name: string): { value?: boolean; problem?: string } {
  const v = env[name];
  if (v === undefined || v === '') return {};
  if (GO_TRUE.includes(v)) return { value: true };
  if (GO_FALSE.includes(v)) return { value: false };
  return { problem: `${name} is ${preview(v, 40)}: not a boolean (true or false; the temporal CLI also reads 1, t, TRUE, True, 0, f, FALSE, False)` };
}

/** A profile value of the wrong type (TOML takes any): a problem naming the key and the profile. */
function profileTypeProblems(profile: ClientConfigProfile, where: string): string[] {
  const problems: string[] = [];
  // (The address is checked as every address is, below.)
  for (const [key, name] of [['namespace', 'namespace'], ['apiKey', 'api_key']] as const) {
    const v = profile[key];
    if (v !== undefined && typeof v !== 'string') problems.push(`${name} of ${where} must be a string (got ${Array.isArray(v) ? 'a list' : typeof v})`);
  }
  const disabled = profile.tls?.disabled;
  if (disabled !== undefined && typeof disabled !== 'boolean') problems.push(`tls.disabled of ${where} must be true or false, unquoted (got ${JSON.stringify(disabled)})`);
  const serverName = profile.tls?.serverName;
  if (serverName !== undefined && typeof serverName !== 'string') problems.push(`tls.server_name of ${where} must be a string (got ${typeof serverName})`);
  return problems;
}

function profileOf(env: NodeJS.ProcessEnv): { profile: ClientConfigProfile; where: string } | { problem: string } {
  const file = temporalConfigFile(env);
  const name = env.TEMPORAL_PROFILE || 'default';
  const where = `temporal CLI profile ${preview(name, 80)} in ${file.path === undefined ? '(no config file: neither HOME nor XDG_CONFIG_HOME is set)' : cut(file.path, 200)}`;
  if (file.explicit && !existsSync(file.path!)) {
    return { problem: `TEMPORAL_CONFIG_FILE names ${cut(file.path!, 200)}, which does not exist` };
  }
  if (!file.path || !existsSync(file.path)) {
    if (env.TEMPORAL_PROFILE) return { problem: `TEMPORAL_PROFILE is ${preview(name, 80)}, but there is no temporal CLI config file (${cut(file.path ?? 'no HOME', 200)}); set TEMPORAL_CONFIG_FILE` };
    return { profile: {}, where };
  }
  try {
    // The file's own environment handling is off: the environment is its own source here.
    const profile = loadClientConfigProfile({ profile: name, configSource: { path: file.path }, disableEnv: true, overrideEnvVars: { ...env } as Record<string, string> });
    return { profile, where };
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    if (/not found in config data/.test(message)) {
      return { problem: `TEMPORAL_PROFILE is ${preview(name, 80)}, but ${cut(file.path, 200)} has no profile ${preview(name, 80)} ([profile.${cut(name, 80)}])` };
    }
    return { problem: envconfigProblem(err, `temporal CLI config file ${file.path}`) };
  }
}

/**
 * The `temporal` settings from the file's section, the environment and the temporal CLI's
 * profile, in that order (see above), or every problem, each naming where its value came from.
 * Pure but for reading the profile file; `env` is the environment to read.
 */
export function resolveTemporal(file: TemporalFileConfig, env: NodeJS.ProcessEnv): { temporal: TemporalConfig } | { problems: TemporalProblem[] } {
  const problems: TemporalProblem[] = [];
  const tlsVar = envBool(env, 'TEMPORAL_TLS');
  const noHostCheck = envBool(env, 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION');
  for (const { problem } of [tlsVar, noHostCheck]) if (problem) problems.push({ path: ['tls'], message: problem });
  // The SDK's reader is given TEMPORAL_TLS as the temporal CLI reads it (TRUE is true; empty is unset).
  const envForSdk: Record<string, string | undefined> = { ...env, TEMPORAL_TLS: tlsVar.value === undefined ? undefined : String(tlsVar.value) };
  if (envForSdk.TEMPORAL_TLS === undefined) delete envForSdk.TEMPORAL_TLS;
  let fromEnv: ClientConfigProfile = {};
  try {
    fromEnv = loadClientConfigProfile({ disableFile: true, overrideEnvVars: envForSdk as Record<string, string> });
  } catch (err) {
    problems.push({ path: [], message: envconfigProblem(err, 'environment TEMPORAL_TLS_*') });
  }
  if (noHostCheck.value === true) {
    problems.push({ path: ['tls'], message: 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is set, but tend always verifies the server\'s host name; set TEMPORAL_TLS_SERVER_NAME to the name its certificate has' });
  }
  const fromProfile = profileOf(env);
  if ('problem' in fromProfile) problems.push({ path: [], message: fromProfile.problem });
  const profile = 'profile' in fromProfile ? fromProfile.profile : {};
  const profileWhere = 'where' in fromProfile ? fromProfile.where : '';
  for (const message of profileTypeProblems(profile, profileWhere)) problems.push({ path: [], message });

  const pick = <T>(fileValue: T | undefined, fileName: string, envValue: T | undefined, envName: string, profValue: T | undefined, profName: string) =>
    fileValue !== undefined ? { value: fileValue, from: `temporal.${fileName} in the config file` }
    : envValue !== undefined && envValue !== '' ? { value: envValue, from: envName }
    : profValue !== undefined && profValue !== '' ? { value: profValue, from: `${profName} of ${profileWhere}` }
    : undefined;

  const address = pick(file.address, 'address', fromEnv.address, 'TEMPORAL_ADDRESS', profile.address, 'address') ?? { value: 'localhost:7233', from: "tend's default" };
  const namespace = pick(file.namespace, 'namespace', fromEnv.namespace, 'TEMPORAL_NAMESPACE', profile.namespace, 'namespace') ?? { value: 'default', from: "tend's default" };
  const apiKey = pick(file.apiKey, file.apiKeyEnv ? 'apiKeyEnv' : 'apiKey', fromEnv.apiKey, 'TEMPORAL_API_KEY', profile.apiKey, 'api_key');
  if (file.apiKeyEnv && apiKey) apiKey.from = `$${file.apiKeyEnv} (temporal.apiKeyEnv in the config file)`;

  const addressProblem = addressSchema.safeParse(address.value);
  if (!addressProblem.success) {
    problems.push({ path: ['address'], message: `${address.from} is ${preview(String(address.value), 80)}: ${addressProblem.error.issues[0]!.message}` });
  }

  const tlsOrigins: Record<string, string> = {};
  let tls: TemporalConfig['tls'];
  if (file.tls !== undefined) {
    tls = file.tls;
    tlsOrigins.tls = 'temporal.tls in the config file';
  } else {
    const merged: ResolvedTls = {};
    let disabled: { value: boolean; from: string } | undefined;
    for (const field of Object.keys(envTls) as (keyof ClientConfigTLS)[]) {
      const e = fromEnv.tls?.[field];
      const p = profile.tls?.[field];
      const [value, names, where] = e !== undefined ? [e, envTls[field], ''] : [p, profileTls[field], ` of ${profileWhere}`];
      if (value === undefined) continue;
      if (field === 'disabled') {
        disabled = { value: value as boolean, from: `${names[0]}${where}` };
        continue;
      }
      if (field === 'serverName') {
        merged.serverName = value as string;
        tlsOrigins.serverName = `${names[0]}${where}`;
        continue;
      }
      const source = value as { path: string } | { data: Uint8Array | string };
      const [pathKey, dataKey] = tendTls[field];
      if ('path' in source) {
        (merged as Record<string, string>)[pathKey] = source.path;
        tlsOrigins[pathKey] = `${names[0]}${where}`;
      } else {
        (merged as Record<string, string>)[dataKey!] = typeof source.data === 'string' ? source.data : new TextDecoder().decode(source.data);
        tlsOrigins[dataKey!] = `${names[1]}${where}`;
      }
    }
    const hasCert = merged.clientCertPath !== undefined || merged.clientCertData !== undefined;
    const hasKey = merged.clientKeyPath !== undefined || merged.clientKeyData !== undefined;
    if (hasCert !== hasKey) {
      const [given, missing] = hasCert
        ? [tlsOrigins.clientCertPath ?? tlsOrigins.clientCertData, 'a client key (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA, or the profile\'s tls.client_key_path)']
        : [tlsOrigins.clientKeyPath ?? tlsOrigins.clientKeyData, 'a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH or _DATA, or the profile\'s tls.client_cert_path)'];
      problems.push({ path: ['tls'], message: `${given} gives half of a client certificate pair; mutual TLS also needs ${missing}` });
    }
    if (disabled?.value === true) {
      tls = false;
      tlsOrigins.tls = disabled.from;
    } else if (Object.keys(merged).length > 0) {
      tls = merged;
    } else if (disabled?.value === false) {
      tls = true;
      tlsOrigins.tls = disabled.from;
    }
  }

  if (problems.length > 0) return { problems };
  const temporal: TemporalConfig = {
    ...(file.apiKeyEnv !== undefined && { apiKeyEnv: file.apiKeyEnv }),
    address: address.value,
    namespace: namespace.value,
    taskQueue: file.taskQueue,
    ...(tls !== undefined && { tls }),
    ...(apiKey && { apiKey: apiKey.value }),
    ...(file.deployment && { deployment: file.deployment }),
  };
  origins.set(temporal, { address: address.from, namespace: namespace.from, ...(apiKey && { apiKey: apiKey.from }), tls: tlsOrigins });
  return { temporal };
}

export const kubernetesSchema = z.strictObject({
  /** A kubeconfig file (`~` expanded); in-cluster credentials when absent. */
  kubeconfig: pathSchema.optional(),
  /** A context in that kubeconfig; its current context when absent. */
  context: boundedName(CONTEXT_MAX).optional(),
  /**
   * tend's own namespace, where it keeps what it owns (the weeder's readiness
   * record). When absent: the in-cluster ServiceAccount's namespace, else tend-system.
   */
  namespace: kubeNameSchema(dns1123LabelProblem).optional(),
});

/** tend's one HTTP port: /metrics, /healthz and /readyz. */
export const httpSchema = z.strictObject({
  /** host:port to listen on; `--http-address` overrides it. */
  address: addressSchema.default('0.0.0.0:9464'),
});

type SectionsShape = { [K in SectionName]: z.ZodOptional<(typeof sections)[K]['schema']> };

const sectionsShape = Object.fromEntries(
  Object.entries(sections).map(([name, section]) => [name, section.schema.optional()]),
) as SectionsShape;

export const configSchema = z.strictObject({
  /** Every capability's mode unless its section sets its own (src/config/mode.ts). */
  mode: modeSchema.optional(),
  temporal: temporalSchema.prefault({}),
  kubernetes: kubernetesSchema.prefault({}),
  http: httpSchema.prefault({}),
  ...sectionsShape,
}).superRefine((config, ctx) => {
  // Across sections: what nodeRepair queues must be repair's to carry out.
  for (const p of nodeRepairProblems(config)) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
});

export type TlsOptions = z.output<typeof tlsOptionsSchema>;
export type DeploymentConfig = z.output<typeof deploymentSchema>;
export type TemporalFileConfig = z.output<typeof temporalFileSchema>;
export type KubernetesConfig = z.output<typeof kubernetesSchema>;
export type HttpConfig = z.output<typeof httpSchema>;
export type Config = z.output<typeof configSchema>;
/** What a config file may hold, before defaults. */
export type ConfigInput = z.input<typeof configSchema>;
