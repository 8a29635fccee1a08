/**
 * `make e2e-media` (`E2E_GROUP=media`): the test media made ahead of the suite; the global
 * setup made them, and this checks that each is there.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { makeTestMedia } from './test-media.js';

test('the videos and ladders the suite plays are made', async () => {
  for (const path of await makeTestMedia()) {
    expect(existsSync(path), path).toBe(true);
    const made = statSync(path);
    expect(made.isDirectory() ? readdirSync(path).length : made.size, `${path} is empty`).toBeGreaterThan(0);
  }
});
