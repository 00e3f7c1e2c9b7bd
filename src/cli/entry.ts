#!/usr/bin/env node
// The compiled command (dist/cli/entry.js) that the container image runs: the same `svc` as
// bin/svc.js, without its source-freshness check or tsx fallback, since an image carries only
// dist/ and production dependencies.
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
