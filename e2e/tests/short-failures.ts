/**
 * A Playwright reporter that writes one short entry per failed test (its title and the
 * first lines of its error) to target/e2e/failed-tests.txt, which `make test-e2e` prints
 * last: CI shows only the end of its log, after the failed tests' long reports.
 */
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { Reporter, TestCase, TestResult } from '@playwright/test/reporter';
import { ROOT } from './swarm.js';

const FILE = join(ROOT, 'target', 'e2e', 'failed-tests.txt');
/** Lines of each error kept, and characters per line. */
const LINES = 4;
const WIDTH = 400;

export default class ShortFailures implements Reporter {
  onBegin(): void {
    // `make test-e2e` runs the suite in groups (E2E_GROUP) and clears the file before the first.
    if (!process.env.E2E_GROUP) rmSync(FILE, { force: true });
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    // Skipped though expected to pass: not run (after maxFailures), not failed.
    if (result.status === test.expectedStatus || result.status === 'skipped') return;
    const where = `${test.location.file.split('/').pop()}:${test.location.line}`;
    const lines = [`✘ ${where} ${test.title} (${result.status}, ${(result.duration / 1000).toFixed(0)} s)`];
    for (const error of result.errors.slice(0, 2)) {
      const text = stripVTControlCharacters(error.message ?? error.value ?? '');
      const kept = text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '')
        .slice(0, LINES);
      lines.push(...kept.map((l) => `    ${l.slice(0, WIDTH)}`));
    }
    mkdirSync(dirname(FILE), { recursive: true });
    appendFileSync(FILE, lines.join('\n') + '\n');
  }
}
