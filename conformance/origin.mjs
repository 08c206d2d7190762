// The origin of the HTTP caching test suite (http-cache-tests), bound to loopback.
//
// The package's own server/server.mjs listens on every interface, on a port taken from npm's
// configuration, writes a pid file into its working directory and serves files from it. This
// wrapper keeps the suite's request handlers exactly as shipped (config, test and state) and
// only changes where they listen: 127.0.0.1 on the port given as the first argument (0 picks
// a free one). Other paths, where the package serves its browser pages, answer 404. Once
// listening it prints one line, "listening http://127.0.0.1:PORT", which the caller waits for.
import http from 'http'
import process from 'process'

import handleConfig from 'http-cache-tests/server/handle-config.mjs'
import handleState from 'http-cache-tests/server/handle-state.mjs'
import handleTest from 'http-cache-tests/server/handle-test.mjs'

const port = parseInt(process.argv[2] || '0', 10)

function handleMain (request, response) {
  const url = new URL(request.url, 'http://127.0.0.1/')
  const pathSegs = url.pathname.split('/')
  pathSegs.shift()
  const dispatch = pathSegs.shift()
  if (dispatch === 'config') {
    handleConfig(pathSegs, request, response)
  } else if (dispatch === 'test') {
    handleTest(pathSegs, request, response)
  } else if (dispatch === 'state') {
    handleState(pathSegs, request, response)
  } else {
    response.writeHead(404, { 'Content-Type': 'text/plain' })
    response.end('not found\n')
  }
}

const server = http.createServer(handleMain)
server.on('listening', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`)
})
server.on('error', err => {
  console.error(`origin: ${err.message}`)
  process.exit(1)
})
// With --watch-stdin, stdin closing (the parent died or let go of the pipe) ends the origin.
if (process.argv.includes('--watch-stdin')) {
  process.stdin.on('end', () => process.exit(0))
  process.stdin.resume()
}
server.listen(port, '127.0.0.1')
