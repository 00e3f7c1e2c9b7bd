import { expect, test } from 'vitest';
import { differences, everything } from '../../clients/scripts/regenerate.ts';

// The clients cannot drift from the daemon: the OpenAPI snapshot, the webhook vectors and every
// generated file are derived afresh from the daemon's code and must equal what is committed.
test('clients/openapi.json, clients/webhook-vectors.json and every generated client file are what regenerate.ts makes from the daemon', async () => {
  const files = await everything();
  const generated = [...files.keys()].map((file) => file.slice(file.lastIndexOf('/clients/') + 1));
  expect(generated).toEqual(
    expect.arrayContaining([
      'clients/node/src/generated/types.ts',
      'clients/python/svc_gateway/_generated/types.py',
      'clients/go/types_gen.go',
      'clients/go/resources_gen.go',
      'clients/rust/src/generated/types.rs',
      'clients/rust/src/generated/resources.rs',
    ]),
  );
  expect(differences(files), 'out of date: run `npx tsx clients/scripts/regenerate.ts` and commit the result').toEqual([]);
});
