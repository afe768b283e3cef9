// `tend setup ...`: preparing what tend needs outside itself. `tend setup temporal` registers
// tend's search attributes in its Temporal namespace (the operator service), or prints the
// `temporal` CLI commands that do.
import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { TendCapability, TendNode, TendTarget } from '../search-attributes.ts';
import { connectClient, type TemporalSettings } from '../temporal/connection.ts';
import { configOrSandbox, OperatorError, withConfigOptions, type ConfigFlags } from './cli-support.ts';

/** Every search attribute tend's workflows set; all keywords. */
export const tendSearchAttributes = [TendCapability, TendTarget, TendNode];

// Temporal's IndexedValueType (temporal/api/enums/v1/common.proto), by number.
const indexedValueTypes = ['unspecified', 'text', 'keyword', 'int', 'double', 'bool', 'datetime', 'keyword list'];
const KEYWORD = 2;
const typeName = (t: number) => indexedValueTypes[t] ?? `type ${t}`;

/** The `temporal` CLI commands that register tend's search attributes in `t`'s namespace. */
export function searchAttributeCommands(t: Pick<TemporalSettings, 'address' | 'namespace'>): string[] {
  return tendSearchAttributes.map((key) =>
    `temporal operator search-attribute create --address ${t.address} --namespace ${t.namespace} --name ${key.name} --type Keyword`);
}

export interface SearchAttributeProblem {
  name: string;
  /** What is wrong: missing, or registered with another type. */
  problem: string;
}

/** What the namespace lacks of tend's search attributes (empty when it has them all, as keywords). */
export async function searchAttributeProblems(client: Client, namespace: string): Promise<SearchAttributeProblem[]> {
  const { customAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace });
  return tendSearchAttributes.flatMap((key): SearchAttributeProblem[] => {
    const type = customAttributes?.[key.name];
    if (type === undefined || type === null) return [{ name: key.name, problem: 'not registered' }];
    if (type !== KEYWORD) return [{ name: key.name, problem: `registered as ${typeName(type)}, tend needs keyword` }];
    return [];
  });
}

/** An operator service call the server refused: Temporal Cloud has no operator service for API keys. */
function operatorRefusal(err: unknown, t: TemporalSettings, what: string): OperatorError {
  const reason = (err as Error)?.message ?? String(err);
  return new OperatorError(
    `Temporal at ${t.address} refused to ${what} in namespace ${t.namespace}: ${reason}\n` +
    '  On Temporal Cloud add them in the namespace\'s settings (or with tcld); elsewhere run these with an admin\'s credentials:\n' +
    searchAttributeCommands(t).map((l) => `    ${l}`).join('\n'));
}

/**
 * Registers what is missing of tend's search attributes and waits until the namespace lists
 * them; returns the names it registered. An attribute registered with another type is refused
 * (changing a type is an operator's decision).
 */
export async function registerSearchAttributes(client: Client, t: TemporalSettings, timeoutMs = 60_000): Promise<string[]> {
  let problems: SearchAttributeProblem[];
  try {
    problems = await searchAttributeProblems(client, t.namespace);
  } catch (err) {
    throw operatorRefusal(err, t, 'list search attributes');
  }
  const wrongType = problems.filter((p) => p.problem !== 'not registered');
  if (wrongType.length > 0) {
    throw new OperatorError(`namespace ${t.namespace} has ${wrongType.map((p) => `${p.name} ${p.problem}`).join('; ')}: ` +
      'remove it (`temporal operator search-attribute remove`) or use another namespace');
  }
  const missing = problems.map((p) => p.name);
  if (missing.length === 0) return [];
  try {
    await client.connection.operatorService.addSearchAttributes({
      namespace: t.namespace,
      searchAttributes: Object.fromEntries(missing.map((name) => [name, KEYWORD])),
    });
  } catch (err) {
    throw operatorRefusal(err, t, 'add search attributes');
  }
  // Registration may complete in the background: wait until the namespace lists them.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await searchAttributeProblems(client, t.namespace);
    if (left.length === 0) return missing;
    if (Date.now() > deadline) {
      throw new OperatorError(`registered ${missing.join(', ')} in namespace ${t.namespace}, but after ${timeoutMs / 1000}s it still lists ${left.map((p) => `${p.name} as ${p.problem}`).join(', ')}`);
    }
    await sleep(500);
  }
}

export function registerSetupCommands(program: Command): void {
  const setup = program.command('setup').description('prepare what tend needs on a Temporal server');
  withConfigOptions(setup
    .command('temporal')
    .description("register tend's search attributes (TendCapability, TendTarget, TendNode) in its Temporal namespace"))
    .option('--print', 'print the `temporal operator search-attribute create` commands instead of running anything')
    .action(async (flags: ConfigFlags & { print?: boolean }) => {
      const config = await configOrSandbox(flags, { orEnvironment: true });
      if (flags.print) {
        for (const line of searchAttributeCommands(config.temporal)) console.log(line);
        return;
      }
      const client = await connectClient(config.temporal);
      try {
        const added = await registerSearchAttributes(client, config.temporal);
        const where = `namespace ${config.temporal.namespace} at ${config.temporal.address}`;
        console.log(added.length > 0
          ? `registered ${added.join(', ')} in ${where}`
          : `${where} has every search attribute tend needs (${tendSearchAttributes.map((k) => k.name).join(', ')})`);
      } finally {
        await client.connection.close();
      }
    });
}
