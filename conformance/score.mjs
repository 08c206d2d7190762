// Scores results of the HTTP caching test suite (http-cache-tests) with the suite's own rules
// and prints Weir's line beside those of the caches whose results the package ships.
//
//   node score.mjs RESULTS.json [--floor FILE] [--ceiling FILE] [--failures FILE]
//
// RESULTS.json is what the suite's CLI printed for Weir. Every result, Weir's and the shipped
// ones, goes through the suite's determineTestResult (lib/display.mjs, the function behind
// cache-tests.fyi): dependencies are honoured, a test of kind "optimal" that fails is a
// warning, a "check" test answers yes or no, a setup failure is neither pass nor fail. Only
// the tests the CLI runs are scored (browser-only ones are left out, as the CLI leaves them
// out), so every line counts the same tests.
//
// "Passed" is the number of tests whose result is a pass (required and optimal tests). With
// --floor, fewer passes than the number in FILE is a failure: exit status 1. A "required
// failure" is a required test whose result is a fail (the table's fail column: an optimal
// test that fails is a warning); with --ceiling, more of them than the number in FILE is a
// failure too. The summary line names the required failures either way.
// With --failures, every test Weir does not pass is written to FILE, one per line, with its
// result, kind, the rev-proxy caches that pass it, and the suite's message.
import fs from 'fs'
import process from 'process'

import tests from 'http-cache-tests/tests/index.mjs'
import surrogate from 'http-cache-tests/tests/surrogate-control.mjs'
import shipped from 'http-cache-tests/results/index.mjs'
import { determineTestResult } from 'http-cache-tests/lib/display.mjs'

// The CLI runs the surrogate-control tests too (cli.mjs).
tests.push(surrogate)

// The suite's result types by the console symbol determineTestResult returns.
const SYMBOLS = {
  '✅': 'pass',
  '⛔️': 'fail',
  '⚠️': 'optimal_fail',
  Y: 'yes',
  N: 'no',
  '🔹': 'setup_fail',
  '⁉️': 'harness_fail',
  '⚪️': 'dependency_fail',
  '↻': 'retry',
  '-': 'untested'
}
const COLUMNS = [
  ['pass', 'pass'],
  ['fail', 'fail'],
  ['optimal_fail', 'warn'],
  ['yes', 'yes'],
  ['no', 'no'],
  ['setup_fail', 'setup'],
  ['dependency_fail', 'dep'],
  ['retry', 'retry'],
  ['harness_fail', 'harness'],
  ['untested', 'untested']
]

function usage (msg) {
  console.error(`score.mjs: ${msg}`)
  console.error('usage: node score.mjs RESULTS.json [--floor FILE] [--ceiling FILE] [--failures FILE]')
  process.exit(2)
}

const args = process.argv.slice(2)
let resultsPath, floorPath, ceilingPath, failuresPath
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--floor') floorPath = args[++i]
  else if (args[i] === '--ceiling') ceilingPath = args[++i]
  else if (args[i] === '--failures') failuresPath = args[++i]
  else if (resultsPath === undefined) resultsPath = args[i]
  else usage(`unexpected argument ${args[i]}`)
}
if (!resultsPath) usage('no results file')

// The tests the CLI runs, in the suite's order.
const scored = []
for (const suite of tests) {
  for (const test of suite.tests) {
    if (test.browser_only === true) continue
    scored.push(test)
  }
}

function readJSON (path) {
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8'))
  } catch (err) {
    console.error(`score.mjs: ${path}: ${err.message}`)
    process.exit(2)
  }
}

// score returns the result type of every scored test and the count of each type.
function score (results) {
  const types = {}
  const counts = {}
  for (const [type] of COLUMNS) counts[type] = 0
  const byKind = { required: [0, 0], optimal: [0, 0] }
  for (const test of scored) {
    const symbol = determineTestResult(tests, test.id, results)[2]
    const type = SYMBOLS[symbol]
    if (type === undefined) throw new Error(`unknown result symbol ${symbol} for ${test.id}`)
    types[test.id] = type
    counts[type]++
    const kind = test.kind || 'required'
    if (kind in byKind) {
      byKind[kind][1]++
      if (type === 'pass') byKind[kind][0]++
    }
  }
  return { types, counts, byKind }
}

const weirResults = readJSON(resultsPath)
const lines = [{ name: 'Weir', type: 'rev-proxy', version: 'this tree', ...score(weirResults) }]
const others = {}
for (const item of shipped) {
  const url = new URL(`./node_modules/http-cache-tests/results/${item.file}`, import.meta.url)
  const results = readJSON(url)
  const line = { name: item.name, type: item.type, version: item.version, ...score(results) }
  others[item.name] = { item, line, results }
  lines.push(line)
}

// The table: one line per cache, Weir first, then the shipped results by passes.
const head = ['cache', 'type', 'version', 'required', 'optimal', ...COLUMNS.map(c => c[1])]
const rows = [head]
const sorted = [lines[0], ...lines.slice(1).sort((a, b) => b.counts.pass - a.counts.pass)]
for (const l of sorted) {
  rows.push([
    l.name, l.type, l.version,
    `${l.byKind.required[0]}/${l.byKind.required[1]}`,
    `${l.byKind.optimal[0]}/${l.byKind.optimal[1]}`,
    ...COLUMNS.map(c => String(l.counts[c[0]]))
  ])
}
const widths = head.map((_, i) => Math.max(...rows.map(r => r[i].length)))
const fmt = r => r.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ').trimEnd()
console.log(`HTTP caching test suite http-cache-tests, ${scored.length} tests the CLI runs, scored with the suite's rules`)
console.log('(required/optimal: passes of each kind; warn: an optimal test failed; yes/no: answers of check tests;')
console.log(' dep: a test it depends on did not pass; untested: no result in that file, usually a test newer than the run)')
console.log('')
console.log(fmt(rows[0]))
console.log(widths.map(w => '-'.repeat(w)).join('  '))
for (const r of rows.slice(1)) console.log(fmt(r))
console.log('')

const weir = lines[0]
if (failuresPath) {
  const proxies = Object.values(others).filter(o => o.item.type === 'rev-proxy')
  const out = []
  for (const test of scored) {
    const type = weir.types[test.id]
    if (type === 'pass' || type === 'yes') continue
    const passing = proxies.filter(o => ['pass', 'yes'].includes(o.line.types[test.id])).map(o => o.item.name)
    const raw = weirResults[test.id]
    const msg = Array.isArray(raw) ? raw.join(': ') : (raw === undefined ? 'no result' : String(raw))
    out.push([type, test.kind || 'required', test.id, `[${passing.join(',')}]`, msg].join('\t'))
  }
  fs.writeFileSync(failuresPath, out.join('\n') + '\n')
}

function readCount (path) {
  const n = parseInt(fs.readFileSync(path, 'utf8').trim(), 10)
  if (!Number.isInteger(n)) usage(`${path} does not hold a whole number`)
  return n
}

const passed = weir.counts.pass
const requiredFailures = scored.filter(t => (t.kind || 'required') === 'required' && weir.types[t.id] === 'fail').map(t => t.id)
let summary = `Weir passes ${passed} of ${scored.length} tests (required ${weir.byKind.required[0]}/${weir.byKind.required[1]}, optimal ${weir.byKind.optimal[0]}/${weir.byKind.optimal[1]}), ${requiredFailures.length} required failure(s)`
if (requiredFailures.length > 0) summary += ` [${requiredFailures.join(', ')}]`
let failed = false
if (floorPath) {
  const floor = readCount(floorPath)
  if (passed < floor) {
    summary += `: BELOW the floor of ${floor} in ${floorPath}`
    failed = true
  } else {
    summary += `; floor ${floor}`
    if (passed > floor) summary += ` (raise it to ${passed} in ${floorPath})`
  }
}
if (ceilingPath) {
  const ceiling = readCount(ceilingPath)
  if (requiredFailures.length > ceiling) {
    summary += `; required failures ABOVE the ceiling of ${ceiling} in ${ceilingPath}`
    failed = true
  } else {
    summary += `; required-failure ceiling ${ceiling}`
    if (requiredFailures.length < ceiling) summary += ` (lower it to ${requiredFailures.length} in ${ceilingPath})`
  }
}
console.log(summary)
if (failed) process.exit(1)
