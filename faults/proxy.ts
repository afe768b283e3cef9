// A small HTTPS proxy between tend and kube-apiserver, for two of the fault
// run's faults: cutting every open watch at once, and answering one chosen
// write with an error instead of passing it on. TLS is terminated with the
// sandbox's own serving certificate (tend trusts the sandbox CA already);
// requests go on to kube-apiserver as they came, tend's bearer token included,
// so kube-apiserver (and its audit log) sees tend exactly as without the proxy.
import { createServer, type Server } from 'node:https';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage, ServerResponse, ClientRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import type { Pki } from '../src/sandbox/certs.ts';

/** Which write to fail: method and a test on the request path (no query). */
export interface WriteMatch {
  description: string;
  method: string;
  path: RegExp;
}

export interface InjectedError {
  method: string;
  path: string;
  status: number;
  at: number;
}

interface Open {
  req: IncomingMessage;
  res: ServerResponse;
  upstream?: ClientRequest;
}

const isWatch = (url: URL) => ['true', '1'].includes(url.searchParams.get('watch') ?? '');

export class ApiProxy {
  private server?: Server;
  private readonly watches = new Set<Open>();
  private armed?: { match: WriteMatch; status: number; fired: (e: InjectedError) => void };
  /** Every error this proxy answered instead of kube-apiserver. */
  readonly injected: InjectedError[] = [];
  /** How many watch connections `dropWatches` cut, in all. */
  dropped = 0;

  private readonly pki: Pki;
  private readonly upstreamPort: number;
  constructor(pki: Pki, upstreamPort: number) {
    this.pki = pki;
    this.upstreamPort = upstreamPort;
  }

  async start(): Promise<number> {
    const [cert, key, ca] = await Promise.all([readFile(this.pki.serverCert), readFile(this.pki.serverKey), readFile(this.pki.caCert)]);
    this.server = createServer({ cert, key }, (req, res) => this.handle(req, res, ca));
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.dropWatches();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Cuts every watch connection open now (both sides); returns how many. */
  dropWatches(): number {
    const n = this.watches.size;
    for (const w of this.watches) {
      w.upstream?.destroy();
      w.res.socket?.destroy();
    }
    this.watches.clear();
    this.dropped += n;
    return n;
  }

  /**
   * The next request that matches is answered `status` (a Kubernetes Status
   * body) and never reaches kube-apiserver. Resolves when it has happened.
   */
  failNext(match: WriteMatch, status = 500): Promise<InjectedError> {
    return new Promise((fired) => (this.armed = { match, status, fired }));
  }

  /** Withdraws an armed failure that has not fired; whether one was armed. */
  disarm(): boolean {
    const was = this.armed !== undefined;
    this.armed = undefined;
    return was;
  }

  private handle(req: IncomingMessage, res: ServerResponse, ca: Buffer) {
    const url = new URL(req.url ?? '/', 'https://proxy');
    const armed = this.armed;
    if (armed && req.method === armed.match.method && armed.match.path.test(url.pathname)) {
      this.armed = undefined;
      const e: InjectedError = { method: req.method!, path: url.pathname, status: armed.status, at: Date.now() };
      this.injected.push(e);
      req.resume();
      res.writeHead(armed.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: armed.status,
        reason: 'InternalError', message: `injected by the fault run: ${armed.match.description}`,
      }));
      armed.fired(e);
      return;
    }
    const open: Open = { req, res };
    const headers = { ...req.headers, host: `127.0.0.1:${this.upstreamPort}` };
    const upstream = httpsRequest({
      host: '127.0.0.1', port: this.upstreamPort, method: req.method, path: req.url, headers, ca,
    }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.once('error', () => res.socket?.destroy());
    });
    open.upstream = upstream;
    // kube-apiserver unreachable (restarting): the client sees its connection fail, as it would without the proxy.
    upstream.once('error', () => res.socket?.destroy());
    if (isWatch(url)) {
      this.watches.add(open);
      res.once('close', () => {
        this.watches.delete(open);
        upstream.destroy();
      });
    } else {
      res.once('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
    }
    req.pipe(upstream);
  }
}
