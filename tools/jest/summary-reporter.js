// Writes this Jest run's totals to $SLUICE_TEST_RESULTS_DIR so tools/test-all.sh can print one
// "N passed, N failed" line over every suite. Does nothing when the variable is unset.
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const dir = process.env.SLUICE_TEST_RESULTS_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    const record = {
      passed: results.numPassedTests,
      // Each failed test, and each suite that failed without a failed test (it did not load, or
      // failed outside its tests), once.
      failed: results.numFailedTests + results.testResults.filter(failedOutsideTests).length,
      skipped: results.numPendingTests + results.numTodoTests,
      suites: results.numTotalTestSuites,
      cwd: process.cwd(),
      argv: process.argv.slice(2).join(' '),
      // What failed, short, so the end of a CI log names it (tools/test-all.sh prints these last).
      failures: failuresOf(results),
    };
    const file = path.join(dir, `${Date.now()}-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, JSON.stringify(record));
  }
}

/** A suite that failed though none of its tests did: it did not load, or a hook outside its tests failed. */
function failedOutsideTests(suite) {
  return Boolean(suite.testExecError || suite.failureMessage) && suite.numFailingTests === 0;
}

const MAX_FAILURE_CHARS = 1500;
const ANSI = /\u001b\[[0-9;]*m/g;
const LIBRARY_FRAME = /^\s+at .*(node_modules|node:internal|<anonymous>).*$\n?/gm;

function short(message) {
  return String(message).replace(ANSI, '').replace(LIBRARY_FRAME, '').slice(0, MAX_FAILURE_CHARS);
}

/** Each failed test (or suite that did not run) with the start of its message, colour codes removed. */
function failuresOf(results) {
  const out = [];
  for (const suite of results.testResults) {
    const file = path.relative(process.cwd(), suite.testFilePath);
    if (suite.testExecError) out.push(`${file}: ${short(suite.testExecError.message)}`);
    for (const t of suite.testResults) {
      if (t.status !== 'failed') continue;
      out.push(`${file} › ${t.fullName}: ${short(t.failureMessages.join('\n'))}`);
    }
  }
  return out;
}

module.exports = SummaryReporter;
