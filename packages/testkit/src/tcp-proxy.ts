import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a real server (Postgres, Redis, a broker), for tests of an outage
 * without touching the shared server: `cut()` drops every connection through it and refuses new
 * ones until `restore()`, on the same port; `blackhole()` keeps every connection open but carries
 * nothing either way (a network that went silent: the client waits for its timeouts) until
 * `restore()`, which delivers what waited, as TCP does once a partition heals.
 */
export interface TcpProxy {
  port: number;
  /** The target's URL with its host and port replaced by the proxy's. */
  url(targetUrl: string): string;
  cut(): Promise<void>;
  blackhole(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let silent = false;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // Paused, a socket reads nothing more: what is sent to it waits in the kernel's buffers.
    if (silent) socket.pause();
  };
  const newServer = (): Server =>
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      // Piped first: pipe() resumes its source, which a silent proxy then pauses.
      client.pipe(upstream).pipe(client);
      track(client);
      track(upstream);
    });
  const listen = (server: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  let server: Server | undefined = newServer();
  const port = await listen(server, 0);
  const stop = async (): Promise<void> => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  return {
    port,
    url(targetUrl) {
      const url = new URL(targetUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    cut: stop,
    blackhole() {
      silent = true;
      for (const socket of sockets) socket.pause();
    },
    async restore() {
      if (silent) {
        silent = false;
        for (const socket of sockets) socket.resume();
      }
      if (server) return;
      server = newServer();
      await listen(server, port);
    },
    close: async () => {
      silent = false;
      await stop();
    },
  };
}
