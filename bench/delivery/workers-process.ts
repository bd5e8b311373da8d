import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The delivery workers in a child process of their own (./workers.ts). */
export class WorkersProcess {
  private constructor(private readonly child: ChildProcess) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(env: NodeJS.ProcessEnv): Promise<WorkersProcess> {
    const child = fork(fileURLToPath(new URL('./workers.js', import.meta.url)), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env,
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`delivery workers exited with ${code}`)));
    });
    return new WorkersProcess(child);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ cmd: 'exit' });
    await exited;
  }
}
