// `tend rbac`: the Roles, ClusterRoles and bindings that the configuration's
// capabilities need (docs/rbac.md), as YAML on stdout, for `kubectl apply -f -`
// or as a kustomize resource beside deploy/kubernetes.
import type { Command } from 'commander';
import { configFrom, UsageError, withConfigOptions, type ConfigFlags } from './cli-support.ts';
import { dns1123LabelProblem, dns1123SubdomainProblem } from '../config/kube-names.ts';

interface RbacFlags extends ConfigFlags {
  namespace: string;
  serviceAccount: string;
  name: string;
}

function checked(what: string, value: string, problem: (v: string) => string | undefined): string {
  const p = problem(value);
  if (p) throw new UsageError(`${what} "${value}": ${p}`);
  return value;
}

export function registerRbacCommands(program: Command): void {
  withConfigOptions(program
    .command('rbac')
    .description("print the Roles, ClusterRoles and bindings the configuration's capabilities need (YAML, for kubectl apply)"))
    .option('--namespace <name>', "tend's own namespace (its ServiceAccount and ConfigMaps)", 'tend-system')
    .option('--service-account <name>', "tend's ServiceAccount", 'tend')
    .option('--name <prefix>', 'prefix of the generated objects\' names and their label rbac.tend.dev/name, which prunes select by (another for each tend in one cluster)', 'tend')
    .action(async (flags: RbacFlags) => {
      const namespace = checked('--namespace', flags.namespace, dns1123LabelProblem);
      const serviceAccount = checked('--service-account', flags.serviceAccount, dns1123SubdomainProblem);
      const name = checked('--name', flags.name, dns1123LabelProblem);
      const config = await configFrom(flags);
      const { rbacYaml } = await import('../rbac/generate.ts');
      process.stdout.write(rbacYaml(config, { namespace, serviceAccount, name }, flags.config ?? flags.configMap));
    });
}
