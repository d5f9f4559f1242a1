// Writes this Jest run's totals to $SLUICE_TEST_RESULTS_DIR so tools/test-all.sh can print one
// "N passed, N failed" line over every suite. Does nothing when the variable is unset.
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const dir = process.env.SLUICE_TEST_RESULTS_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    const failedSuites = results.numFailedTestSuites + (results.numRuntimeErrorTestSuites || 0);
    const record = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + (failedSuites > 0 && results.numFailedTests === 0 ? failedSuites : 0),
      skipped: results.numPendingTests + results.numTodoTests,
      suites: results.numTotalTestSuites,
      cwd: process.cwd(),
      argv: process.argv.slice(2).join(' '),
    };
    const file = path.join(dir, `${Date.now()}-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, JSON.stringify(record));
  }
}
module.exports = SummaryReporter;
