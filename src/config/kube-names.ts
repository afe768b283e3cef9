// Kubernetes' own syntax rules for names, label keys and label values
// (apimachinery's validation package), so that a config naming something the
// API server would refuse is caught at start-up instead of silently matching
// nothing. Each function returns what is wrong, or undefined when valid.
import { z } from 'zod';

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// The name part of a label key, and a label value (which may also be empty).
const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

const labelRule = 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit';
const dnsLabelRule = 'lowercase letters, digits and "-", starting and ending with a letter or digit';

/** Namespace and Service names. */
export function dns1123LabelProblem(value: string): string | undefined {
  if (value.length > 63) return `must be at most 63 characters (has ${value.length})`;
  if (!dns1123Label.test(value)) return `must be a DNS-1123 label: ${dnsLabelRule}`;
  return undefined;
}

/** Most object names (ConfigMaps, Deployments), and label key prefixes. */
export function dns1123SubdomainProblem(value: string): string | undefined {
  if (value.length > 253) return `must be at most 253 characters (has ${value.length})`;
  if (!dns1123Subdomain.test(value)) return `must be a DNS-1123 subdomain: dot-separated parts of ${dnsLabelRule}`;
  return undefined;
}

/** A label key (and an annotation or taint key): `[prefix/]name`. */
export function labelKeyProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return 'must be a label key: a name with at most one "/" prefix, like app.kubernetes.io/name';
  const name = parts.at(-1)!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix === '') return 'must be a label key: the prefix before "/" must not be empty';
    const problem = dns1123SubdomainProblem(prefix);
    if (problem) return `must be a label key: its prefix ${problem}`;
  }
  if (name === '') return 'must be a label key: the name must not be empty';
  if (name.length > 63) return `must be a label key: its name must be at most 63 characters (has ${name.length})`;
  if (!labelName.test(name)) return `must be a label key: its name must be ${labelRule}`;
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return `must be a label value: at most 63 characters (has ${value.length})`;
  if (value !== '' && !labelName.test(value)) return `must be a label value: empty, or ${labelRule}`;
  return undefined;
}

/** A string schema refused with `problemOf`'s reason, for names in config sections. */
export function kubeNameSchema(problemOf: (value: string) => string | undefined) {
  return z.string().superRefine((value, ctx) => {
    const problem = problemOf(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, input: value });
  });
}
