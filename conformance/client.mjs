// The client of the HTTP caching test suite (http-cache-tests): runs every test against a
// cache in front of the suite's origin and prints the results as JSON, the format of the
// package's results/*.json.
//
//   node client.mjs BASE_URL [--id TEST_ID] [--timeout SECONDS]
//
// It is the package's cli.mjs with two changes: the base URL and test id are arguments
// rather than npm configuration, and every request has a timeout (default 20s; the longest
// wait a test makes on purpose is 3s), so a request the cache never answers fails its test,
// with a FetchError, instead of hanging the run and losing every result. With --id, one test
// runs with its requests and responses printed, as with the CLI's --id.
import process from 'process'
import fetch from 'node-fetch'

import { runTests, getResults } from 'http-cache-tests/client/runner.mjs'
import * as display from 'http-cache-tests/lib/display.mjs'
import tests from 'http-cache-tests/tests/index.mjs'
import surrogate from 'http-cache-tests/tests/surrogate-control.mjs'

tests.push(surrogate)

function usage (msg) {
  console.error(`client.mjs: ${msg}`)
  console.error('usage: node client.mjs BASE_URL [--id TEST_ID] [--timeout SECONDS]')
  process.exit(2)
}

const args = process.argv.slice(2)
let baseUrl
let testId = ''
let timeoutSeconds = 20
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--id') testId = args[++i] || usage('--id needs a test id')
  else if (args[i] === '--timeout') timeoutSeconds = Number(args[++i])
  else if (baseUrl === undefined) baseUrl = args[i]
  else usage(`unexpected argument ${args[i]}`)
}
if (!baseUrl) usage('no base URL')
if (!(timeoutSeconds > 0)) usage('--timeout must be a number of seconds above 0')
baseUrl = baseUrl.replace(/\/+$/, '')

// node-fetch 2 takes a timeout in milliseconds in the request's options.
function fetchWithTimeout (url, init) {
  return fetch(url, Object.assign({}, init, { timeout: timeoutSeconds * 1000 }))
}

let testsToRun = tests
if (testId !== '') {
  testsToRun = undefined
  for (const suite of tests) {
    for (const test of suite.tests) {
      if (test.id === testId) {
        test.dump = true
        testsToRun = [{ name: suite.name, id: suite.id, description: suite.description, tests: [test] }]
      }
    }
  }
  if (testsToRun === undefined) usage(`no test with id ${testId}`)
  console.log(`Running ${testId}`)
}

runTests(testsToRun, fetchWithTimeout, false, baseUrl)
  .then(() => {
    const results = getResults()
    if (testId !== '') {
      const symbol = display.determineTestResult(tests, testId, results, false)
      console.log(`==== Result: ${symbol[2]} - ${results[testId][1] || ''}`)
    } else {
      console.log(JSON.stringify(results, null, 2))
    }
  })
  .catch(err => {
    console.error(err)
    process.exit(1)
  })
