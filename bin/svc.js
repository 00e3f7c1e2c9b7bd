#!/usr/bin/env node
// The `svc` command. The daemon runs its TypeScript sources through tsx's loader, so there is
// no build step between a clone and `npm start`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
