import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './gateway-process';

/** Where Debian's nginx package puts the binary. */
export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path));

/**
 * nginx on loopback in front of gateway replicas, the way an operator runs a load balancer:
 * round robin, keep-alive to the replicas, streams passed through unbuffered, bodies up to the
 * gateway's own limit. Started in the foreground by the test and stopped with it.
 */
export class Nginx {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly folder: string,
    readonly url: string,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString('utf8')));
  }

  /** `replicas`: base URLs such as `http://127.0.0.1:8081`. */
  static async start(replicas: string[]): Promise<Nginx> {
    if (!NGINX) throw new Error('nginx is not installed (Debian: apt-get install -y nginx)');
    const folder = await mkdtemp(join(tmpdir(), 'gateway-nginx-'));
    // Started as root, nginx's workers run as nobody: they must reach their temporary folders.
    await chmod(folder, 0o755);
    for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) await mkdir(join(folder, name), { mode: 0o777 });
    const port = await freePort();
    await writeFile(join(folder, 'nginx.conf'), nginxConf(folder, port, replicas));
    const child = spawn(NGINX, ['-p', folder, '-c', join(folder, 'nginx.conf'), '-e', join(folder, 'error.log')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const nginx = new Nginx(child, folder, `http://127.0.0.1:${port}`);
    await nginx.waitUntilListening();
    return nginx;
  }

  private async waitUntilListening(): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`nginx exited: ${this.output}`);
      const answered = await fetch(`${this.url}/__nginx`, { signal: AbortSignal.timeout(2_000) }).then(
        (response) => response.text().then(() => response.status === 204),
        () => false,
      );
      if (answered) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`nginx did not listen in time: ${this.output}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    await rm(this.folder, { recursive: true, force: true });
  }
}

function nginxConf(folder: string, port: number, replicas: string[]): string {
  const servers = replicas.map((url) => `    server ${new URL(url).host} max_fails=0;`).join('\n');
  return `daemon off;
worker_processes 1;
pid ${join(folder, 'nginx.pid')};
error_log ${join(folder, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${join(folder, 'client_body')};
  proxy_temp_path ${join(folder, 'proxy')};
  fastcgi_temp_path ${join(folder, 'fastcgi')};
  uwsgi_temp_path ${join(folder, 'uwsgi')};
  scgi_temp_path ${join(folder, 'scgi')};
  upstream gateway {
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 40m;
    location = /__nginx { return 204; }
    location / {
      proxy_pass http://gateway;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
}
