// tend's one HTTP port: /metrics (Prometheus text), /healthz, /readyz.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Health } from './health.ts';
import type { ListenAddress } from './address.ts';

/** Writes the Prometheus text exposition of every metric the process has. */
export type MetricsSource = () => Promise<string>;

export interface HttpServerOptions {
  address: ListenAddress;
  health: Health;
  metrics: MetricsSource;
  /** Told of a failed scrape (the scrape itself answers 500). */
  onError?: (err: unknown, path: string) => void;
}

export interface RunningHttpServer {
  /** The port listened on. */
  port: number;
  close(): Promise<void>;
}

/** The port could not be listened on (in use, not permitted, no such address). */
export class ListenError extends Error {}

/** Prometheus' text format, version 0.0.4 (what prom-client and the SDK's core write). */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8') {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}

async function handle(opts: HttpServerOptions, req: IncomingMessage, res: ServerResponse) {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return send(res, 405, 'only GET and HEAD\n');
  }
  switch (path) {
    case '/healthz':
    case '/readyz': {
      const answer = path === '/healthz' ? opts.health.liveness() : opts.health.readiness();
      return send(res, answer.ok ? 200 : 503, answer.ok ? 'ok\n' : `${answer.problems.join('\n')}\n`);
    }
    case '/metrics':
      try {
        return send(res, 200, await opts.metrics(), PROMETHEUS_CONTENT_TYPE);
      } catch (err) {
        opts.onError?.(err, path);
        return send(res, 500, `metrics could not be collected: ${(err as Error)?.message ?? String(err)}\n`);
      }
    default:
      return send(res, 404, 'not found: tend serves /metrics, /healthz and /readyz\n');
  }
}

/** Listens on the address; rejects with a ListenError that names it when it cannot. */
export async function startHttpServer(opts: HttpServerOptions): Promise<RunningHttpServer> {
  const server: Server = createServer((req, res) => {
    handle(opts, req, res).catch((err) => {
      opts.onError?.(err, req.url ?? '');
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  // A scrape or probe never holds the process open at shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'the port is in use by another process'
        : err.code === 'EACCES' ? 'permission denied (ports below 1024 need privileges)'
        : err.code === 'EADDRNOTAVAIL' ? 'no interface of this host has that address'
        : err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN' ? 'the host name does not resolve'
        : err.message;
      reject(new ListenError(`cannot listen on --http-address ${opts.address.text} (http.address): ${why}`));
    };
    server.once('error', onError);
    server.listen(opts.address.port, opts.address.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
