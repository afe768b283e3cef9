// --http-address and http.address: HOST:PORT, the host a name, an IPv4
// address or a bracketed IPv6 address.

export interface ListenAddress {
  /** As given, for messages. */
  text: string;
  /** For net.Server.listen: brackets removed. */
  host: string;
  port: number;
}

const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):(\d+)$/;

/** The address, or a problem saying what is wrong with it. */
export function parseListenAddress(text: string): ListenAddress | { problem: string } {
  const m = hostPort.exec(text);
  if (!m) return { problem: `"${text}" is not HOST:PORT (like 0.0.0.0:9464, 127.0.0.1:9464 or [::]:9464)` };
  const port = Number(m[3]);
  // 0 would be a port the kernel picks: nothing could be told to scrape it.
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { problem: `"${text}": the port must be from 1 to 65535` };
  const host = m[1]!.startsWith('[') ? m[1]!.slice(1, -1) : m[1]!;
  return { text, host, port };
}
