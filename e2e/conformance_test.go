package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bounds of the conformance run. The suite takes about twenty seconds: it runs its tests a
// hundred at a time, and many of them wait 3s on purpose between two requests.
const (
	// suiteInstallTimeout bounds `npm ci` of the suite's package.
	suiteInstallTimeout = 5 * time.Minute
	// suiteRunTimeout bounds the suite's client, end to end.
	suiteRunTimeout = 5 * time.Minute
	// suiteRequestTimeout bounds each request the client makes: a request Weir never answers
	// fails its test rather than the whole run.
	suiteRequestTimeout = "20"
	// suiteOriginStart bounds the wait for the suite's origin to listen.
	suiteOriginStart = 30 * time.Second
	// suiteScoreTimeout bounds the scoring script.
	suiteScoreTimeout = time.Minute
)

// suiteMiddleware is the Weir configuration the suite runs against, weir-suite of
// testdata/dynamic/conformance.yml, which says why each of its values is what it is.
func suiteMiddleware(t *testing.T) map[string]interface{} {
	t.Helper()
	return fixtureMiddleware(t, "conformance.yml", "weir-suite")
}

// TestConformance runs the public HTTP caching test suite, npm package http-cache-tests
// (pinned in conformance/package-lock.json), through Traefik with Weir in front of the
// suite's own origin, scores the results with the suite's rules beside the other caches'
// results the package ships (nginx, Varnish, Squid, Apache httpd, Traffic Server, Fastly,
// ...), and fails if Weir passes fewer tests than conformance/floor.txt says, or fails more
// required tests than conformance/ceiling.txt allows.
//
// It needs Node.js and npm; the node modules are installed with `npm ci` when
// conformance/node_modules does not match the lock file. The results are left in
// conformance/out/: weir.json (the suite's format), failures.tsv, score.txt.
//
// With WEIR_CONFORMANCE_ID=<test id>, only that test runs, and the requests and responses
// the client and the origin saw are logged instead of a score: the way to study a failure.
func TestConformance(t *testing.T) {
	requireTraefik(t)
	repo, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	dir := filepath.Join(repo, "conformance")
	node, npm := requireNode(t)
	began := time.Now()
	installSuite(t, npm, dir)
	installed := time.Now()

	originURL, originLog := startSuiteOrigin(t, node, dir)
	d := Dynamic{
		Routes:      []Route{{Name: "suite", Rule: "PathPrefix(`/`)", Middleware: "weir-suite"}},
		Middlewares: map[string]map[string]interface{}{"weir-suite": suiteMiddleware(t)},
	}
	tr := startTraefikWith(t, Options{}, originURL, d)
	started := time.Now()

	if id := os.Getenv("WEIR_CONFORMANCE_ID"); id != "" {
		t.Logf("client:\n%s", runSuiteTest(t, node, dir, tr.WebURL, id))
		t.Logf("origin:\n%s", readTail(originLog, 200))
		return
	}

	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	results := filepath.Join(out, "weir.json")
	runSuiteClient(t, node, dir, tr.WebURL, results)
	ran := time.Now()

	if tr.Exited() {
		t.Fatalf("traefik died during the suite: %v", tr.exitError())
	}
	score := scoreSuite(t, node, dir, results)
	t.Logf("npm ci %v, origin and traefik start %v, suite %v",
		installed.Sub(began).Round(time.Millisecond), started.Sub(installed).Round(time.Millisecond), ran.Sub(started).Round(time.Millisecond))
	t.Logf("scores (results in %s):\n%s", out, score)
}

// requireNode returns node and npm from PATH. Without them the test skips, or fails when
// WEIR_E2E=required.
func requireNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		npm, err = exec.LookPath("npm")
	}
	if err != nil {
		Unavailable(t, fmt.Sprintf("the HTTP caching test suite needs Node.js and npm on PATH: %v", err))
	}
	return node, npm
}

// installSuite runs `npm ci` in dir unless node_modules already holds every package of the
// lock file at its locked version: a tree installed by an earlier run is reused as it is,
// and one that does not match is installed afresh from the lock file.
func installSuite(t *testing.T, npm, dir string) {
	t.Helper()
	stale, err := modulesStale(dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if stale == "" {
		return
	}
	t.Logf("installing the suite with npm ci (%s)", stale)
	ctx, cancel := context.WithTimeout(context.Background(), suiteInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, tail(string(outb), 30))
	}
	if stale, err = modulesStale(dir); err != nil || stale != "" {
		t.Fatalf("after npm ci in %s: node_modules still differs from the lock file: %s %v", dir, stale, err)
	}
}

// modulesStale compares dir/node_modules with dir/package-lock.json and returns the first
// difference, or "" when every locked package is installed at its version.
func modulesStale(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("read the suite's lock file: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return "", fmt.Errorf("parse %s: %w", filepath.Join(dir, "package-lock.json"), err)
	}
	if len(lock.Packages) < 2 {
		return "", fmt.Errorf("%s locks no package (lockfileVersion 2 or 3 expected)", filepath.Join(dir, "package-lock.json"))
	}
	for path, p := range lock.Packages {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path), "package.json"))
		if err != nil {
			return path + " is not installed", nil
		}
		var installed struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(data, &installed) != nil || installed.Version != p.Version {
			return fmt.Sprintf("%s is %q, the lock says %q", path, installed.Version, p.Version), nil
		}
	}
	return "", nil
}

// startSuiteOrigin starts the suite's origin (conformance/origin.mjs) on a free loopback
// port and returns its URL and the file that collects its output. It ends with the test, or
// with the test process: it leaves when its stdin closes.
func startSuiteOrigin(t *testing.T, node, dir string) (url, logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "origin.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cmd := exec.Command(node, "origin.mjs", "0", "--watch-stdin")
	cmd.Dir = dir
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the suite's origin: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer func() { recover() }()
		cmd.Wait()
		logFile.Close()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the suite's origin (pid %d) hangs after kill", cmd.Process.Pid)
		}
	})

	// The first line says where it listens; the rest (the suite's server warnings) goes to
	// the log.
	first := make(chan string, 1)
	go func() {
		defer func() { recover() }()
		sc := bufio.NewScanner(stdout)
		line := ""
		if sc.Scan() {
			line = sc.Text()
		}
		first <- line
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
		}
	}()
	select {
	case line := <-first:
		url = strings.TrimPrefix(line, "listening ")
		if url == line || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("the suite's origin printed %q, not its address; log:\n%s", line, readTail(logPath, 20))
		}
		return url, logPath
	case <-time.After(suiteOriginStart):
		t.Fatalf("the suite's origin did not listen within %v; log:\n%s", suiteOriginStart, readTail(logPath, 20))
	}
	return "", logPath
}

// runSuiteClient runs every test of the suite against baseURL and writes the results JSON.
func runSuiteClient(t *testing.T, node, dir, baseURL, results string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), suiteRunTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "client.mjs", baseURL, "--timeout", suiteRequestTimeout)
	cmd.Dir = dir
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	dieWithParent(cmd)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within %v\n%s", suiteRunTimeout, tail(stderr.String(), 30))
	}
	if err != nil {
		t.Fatalf("the suite's client: %v\n%s", err, tail(stderr.String(), 30))
	}
	var parsed map[string]interface{}
	if err := json.Unmarshal(stdout.Bytes(), &parsed); err != nil || len(parsed) == 0 {
		t.Fatalf("the suite's client printed no results (%v)\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.String(), 20), tail(stderr.String(), 30))
	}
	if err := os.WriteFile(results, stdout.Bytes(), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
}

// runSuiteTest runs the one test id against baseURL and returns what the client printed:
// its requests, the responses, and the result.
func runSuiteTest(t *testing.T, node, dir, baseURL, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "client.mjs", baseURL, "--id", id, "--timeout", suiteRequestTimeout)
	cmd.Dir = dir
	dieWithParent(cmd)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite's client, test %s: %v\n%s", id, err, outb)
	}
	return string(outb)
}

// scoreSuite scores the results against the floor and the required-failure ceiling and
// returns the score table, which the caller logs. Below the floor, or above the ceiling, the
// test fails.
func scoreSuite(t *testing.T, node, dir, results string) string {
	t.Helper()
	out := filepath.Dir(results)
	ctx, cancel := context.WithTimeout(context.Background(), suiteScoreTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "score.mjs", results,
		"--floor", "floor.txt", "--ceiling", "ceiling.txt", "--failures", filepath.Join(out, "failures.tsv"))
	cmd.Dir = dir
	outb, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(out, "score.txt"), outb, 0o644)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("fewer tests pass than conformance/floor.txt requires, or more required tests fail than conformance/ceiling.txt allows (score below); the tests Weir does not pass are listed in %s",
			filepath.Join(out, "failures.tsv"))
	case err != nil:
		t.Fatalf("score the suite: %v\n%s", err, outb)
	}
	return string(outb)
}

// readTail is the last n lines of the file at path, or why it cannot be read.
func readTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(string(data), n)
}
