// The config file's shape. Every object is strict: a misspelt key is an
// error, not a silently ignored setting. temporal and kubernetes always
// exist after parsing (with defaults); capability sections exist only when
// configured (see sections.ts).
import { z } from 'zod';
import { dns1123LabelProblem, kubeNameSchema } from './kube-names.ts';
import { sections, type SectionName } from './sections.ts';

// host:port, the host a name, an IPv4 address or a bracketed IPv6 address.
const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):(\d+)$/;

const addressSchema = z.string().superRefine((address, ctx) => {
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

const pathSchema = z.string().min(1);

export const tlsOptionsSchema = z
  .strictObject({
    serverName: z.string().min(1).optional(),
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

export const temporalSchema = z
  .strictObject({
    address: addressSchema.default('localhost:7233'),
    namespace: z.string().min(1).default('default'),
    taskQueue: z.string().min(1).default('tend'),
    /** true: TLS with the system's root certificates; a mapping: TLS with these files. */
    tls: z
      .union([z.boolean(), tlsOptionsSchema], {
        error: 'must be true, false, or a mapping of serverName, serverRootCACertPath, clientCertPath and clientKeyPath',
      })
      .optional(),
    apiKey: z.string().min(1).optional(),
    /** The environment variable holding the API key, so that the key need not sit in the file. */
    apiKeyEnv: z
      .string()
      .regex(envVarName, 'must be an environment variable name: letters, digits and "_", not starting with a digit')
      .optional(),
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

export const kubernetesSchema = z.strictObject({
  /** A kubeconfig file (`~` expanded); in-cluster credentials when absent. */
  kubeconfig: pathSchema.optional(),
  /** A context in that kubeconfig; its current context when absent. */
  context: z.string().min(1).optional(),
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
  temporal: temporalSchema.prefault({}),
  kubernetes: kubernetesSchema.prefault({}),
  http: httpSchema.prefault({}),
  ...sectionsShape,
});

export type TlsOptions = z.output<typeof tlsOptionsSchema>;
export type TemporalConfig = z.output<typeof temporalSchema>;
export type KubernetesConfig = z.output<typeof kubernetesSchema>;
export type HttpConfig = z.output<typeof httpSchema>;
export type Config = z.output<typeof configSchema>;
/** What a config file may hold, before defaults. */
export type ConfigInput = z.input<typeof configSchema>;
