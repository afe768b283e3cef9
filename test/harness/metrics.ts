// Reading tend's /metrics in end-to-end tests.

/** The sum of a counter's samples for `namespace` in a Prometheus text exposition. */
export function counterFor(metrics: string, name: string, namespace: string): number {
  return metrics.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes(`namespace="${namespace}"`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** tend's /metrics at `address` (host:port), as text. */
export async function metricsOf(address: string): Promise<string> {
  return (await fetch(`http://${address}/metrics`)).text();
}
