#!/usr/bin/env node
/**
 * `gateway-admin keys create --owner team-a --models text-model-1 --expires 2027-01-01` (the
 * package's bin; `npm run admin -- …` in a source checkout, after `npm run build`): the admin
 * API's owner, key and usage operations for operators without HTTP tooling, straight on the
 * gateway's database (see ADMIN_CLI_USAGE). Plain node on the built file, so it also runs in
 * the Docker image, which has no TypeScript compiler.
 */
import 'reflect-metadata';
import { runCommandLine } from '../src/admin/admin-command-line';

const output = { out: (text: string) => process.stdout.write(text), err: (text: string) => process.stderr.write(text) };

runCommandLine(process.argv.slice(2), process.env, output).then(
  (status) => process.exit(status),
  (error: unknown) => {
    // Only letting go of the database can fail here; every other failure is an answer above.
    process.stderr.write(`admin: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
