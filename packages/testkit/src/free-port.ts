import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The first port of the OS's ephemeral range, from which it picks the local port of every
 * outgoing connection (Linux: /proc/sys/net/ipv4/ip_local_port_range; elsewhere the IANA range).
 */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    if (low) return low;
  } catch {
    // Not Linux: the IANA range.
  }
  return 49152;
}

/** Whether 127.0.0.1:port can be listened on right now. */
function listenable(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port nothing listens on right now, for a process a test starts: picked at random below
 * the OS's ephemeral range. A port the OS picked (listen on 0) came from that range, and between
 * its check and the process's listen the OS could give it to an outgoing connection of anyone's
 * (a fault run's delivery process failed to start: EADDRINUSE on 38533, a port no test had
 * picked). Below the range only another explicit listen can take it.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  const floor = 10_000;
  const span = Math.max(1, Math.min(low, 65_536) - floor);
  for (let tries = 0; tries < 100; tries++) {
    const port = floor + Math.floor(Math.random() * span);
    if (await listenable(port)) return port;
  }
  throw new Error(`no free port in ${floor}–${floor + span - 1}`);
}
