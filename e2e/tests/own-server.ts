// A server of the test's own (the one scripts/test.sh started cannot be stopped, frozen or restarted from
// a test): the release binary on a random port, over a data directory the test chooses.
import { spawn, execFileSync, ChildProcess } from 'child_process';
import * as path from 'path';

const root = path.resolve(process.cwd(), '..');
// OUTCOMES_BIN overrides the binary (a debug build, locally).
const binary = process.env.OUTCOMES_BIN ?? path.join(root, 'target/release/outcomes');

/** Runs `outcomes <args>` to its end; its stdout. */
export function outcomes(args: string[]): string {
  return execFileSync(binary, args, { env: { ...process.env }, encoding: 'utf8' });
}

export class OwnServer {
  readonly base: string;
  private child?: ChildProcess;

  constructor(readonly port: number) {
    this.base = `http://127.0.0.1:${port}`;
  }

  /** Starts the server on `dataDir` (with `serve`'s `extra` arguments) and waits for `/healthz`. */
  async start(dataDir: string, extra: string[] = []): Promise<void> {
    const child = spawn(binary, ['serve', '--addr', `127.0.0.1:${this.port}`, '--data-dir', dataDir,
      '--site-root', path.join(root, 'target/site'), ...extra], { env: { ...process.env }, stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      try {
        const r = await fetch(`${this.base}/healthz`);
        if (r.ok) { this.child = child; return; }
      } catch { /* not up yet */ }
      await new Promise(r => setTimeout(r, 100));
    }
    child.kill('SIGKILL');
    throw new Error('own server did not start');
  }

  /** Kills the server (SIGKILL) and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    child.kill('SIGCONT');
    const exited = new Promise(r => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Freezes the process (SIGSTOP): its connections stay open and say nothing, heartbeats included. */
  freeze(): void { this.child?.kill('SIGSTOP'); }

  /** Lets a frozen process run again (SIGCONT). */
  thaw(): void { this.child?.kill('SIGCONT'); }
}
