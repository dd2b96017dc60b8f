#!/usr/bin/env node
// Starts the pinned verdaccio on 127.0.0.1 at a free port, with its storage in DIR (a temporary
// directory the caller owns) and anonymous publish, and prints `LISTENING <url>` once it accepts
// connections. The caller waits for that line (an event, not a sleep) and kills this process
// when done. Usage: node tools/registry/serve.mjs DIR
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runServer } from 'verdaccio';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: node tools/registry/serve.mjs STORAGE-DIR\n');
  process.exit(2);
}
mkdirSync(join(dir, 'storage'), { recursive: true });
const anyone = { access: '$anonymous', publish: '$anonymous', unpublish: '$anonymous' };
const config = {
  self_path: join(dir, 'config.yaml'),
  storage: join(dir, 'storage'),
  // An empty password file with no sign-ups: nobody logs in, and no one needs to.
  auth: { htpasswd: { file: join(dir, 'htpasswd'), max_users: -1 } },
  uplinks: {},
  packages: { '@*/*': anyone, '**': anyone },
  // No uplinks: nothing is fetched from beyond 127.0.0.1. Big tarballs are fine.
  max_body_size: '100mb',
  log: { type: 'stderr', format: 'json', level: 'error' },
  web: { enable: false },
};
writeFileSync(join(dir, 'htpasswd'), '');
const app = await runServer(config);
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`LISTENING http://127.0.0.1:${port}/\n`);
});
// Idle connections stay open until the end: a client that reuses one (fetch does) must never
// race the server closing it.
server.keepAliveTimeout = 0;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
