// Sums the vitest JSON reports that each package wrote in CI into one closing line:
// "tests: N passed, N failed, N skipped". Exits 1 when a report is missing a count or any test failed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node scripts/summarize-tests.mjs <report-dir>');
  process.exit(2);
}
let passed = 0;
let failed = 0;
let skipped = 0;
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
for (const f of files) {
  const r = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  if (typeof r.numTotalTests !== 'number') {
    console.log(`${f}: not a vitest report, left out`);
    continue;
  }
  passed += r.numPassedTests ?? 0;
  // A suite that failed to run has no failed test to count; a failed test also fails its suites (counted once).
  const failedTests = r.numFailedTests ?? 0;
  failed +=
    failedTests + (r.numRuntimeErrorTestSuites ?? 0) + (failedTests === 0 ? (r.numFailedTestSuites ?? 0) : 0);
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(
    `${f.replace(/\.json$/, '')}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`,
  );
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || files.length === 0 || passed === 0 ? 1 : 0);
