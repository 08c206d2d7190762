package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Options, applied in withDefaults.
const (
	// DefaultStartTimeout bounds Traefik's start: process up, plugin interpreted, first
	// configuration live.
	DefaultStartTimeout = 60 * time.Second
	// DefaultReloadTimeout bounds one configuration change, from the file write until the
	// new routers answer.
	DefaultReloadTimeout = 30 * time.Second
	// DefaultLogLevel is Traefik's log level.
	DefaultLogLevel = "INFO"

	// stopGrace is how long Traefik gets after SIGTERM before it is killed.
	stopGrace = 15 * time.Second
	// pollEvery is the pause between two readiness probes.
	pollEvery = 20 * time.Millisecond
)

// Sentinel errors of the harness.
var (
	errExited  = errors.New("traefik exited")
	errTimeout = errors.New("timed out")
	errRouter  = errors.New("router not serving")
)

// Options says which Traefik runs and where.
type Options struct {
	// Binary is the Traefik executable (see FindTraefik). Required.
	Binary string
	// Root is the repository whose plugin source is loaded. Required.
	Root string
	// Dir is Traefik's working directory; it must exist and be empty. "" means a fresh
	// temporary directory, removed by Stop.
	Dir string
	// LogLevel is Traefik's log level; "" means DefaultLogLevel.
	LogLevel string
	// StartTimeout bounds Start; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// ReloadTimeout bounds Apply; 0 means DefaultReloadTimeout.
	ReloadTimeout time.Duration
	// TrustForwarded makes the web entry point trust the forwarded headers (X-Real-Ip,
	// X-Forwarded-For) of its clients, all on 127.0.0.1, so that a test can speak for
	// clients of other addresses. False: Traefik drops them and sets its own.
	TrustForwarded bool
	// Provider is the block of Weir's provider plugin, as an operator writes it under
	// providers.plugin.<ProviderAlias> (presets, admin, middleware); nil: the provider plugin
	// is not loaded.
	Provider map[string]interface{}
	// WebMiddlewares are middlewares every router of the web entry point goes through
	// (entryPoints.web.http.middlewares), such as a preset of the provider plugin
	// ("weir-api@plugin-weirp"); nil: none.
	WebMiddlewares []string
	// LocalPlugins are further plugins laid out and declared beside Weir (see LocalPlugin);
	// nil: none.
	LocalPlugins []LocalPlugin
}

func (o Options) withDefaults() Options {
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.ReloadTimeout == 0 {
		o.ReloadTimeout = DefaultReloadTimeout
	}
	return o
}

// Traefik is a running Traefik process with Weir as a local plugin.
type Traefik struct {
	// Dir is the working directory, holding the plugin copy, configuration and logs.
	Dir string
	// WebURL is the base URL of the web entry point, where routers serve.
	WebURL string
	// APIURL is the base URL of the traefik entry point: /ping, /api, /debug/pprof.
	APIURL string
	// LogPath is Traefik's log file; OutPath holds what it wrote to stdout and stderr.
	LogPath string
	OutPath string

	opts      Options
	ownDir    bool
	dynDir    string
	originURL string
	client    *http.Client

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error // set before done is closed

	// gen is the generation of the dynamic configuration last written. Apply is not safe
	// for concurrent use; a test drives reloads from one goroutine.
	gen int
	dyn Dynamic
}

// Start lays out the plugin, writes the static and dynamic configuration, starts Traefik
// and returns once the routers of d answer. On failure the error carries the log's tail
// and the process is stopped.
func Start(opts Options, originURL string, d Dynamic) (*Traefik, error) {
	opts = opts.withDefaults()
	if opts.Binary == "" || opts.Root == "" {
		return nil, errors.New("start traefik: Options.Binary and Options.Root are required")
	}
	dir, ownDir, err := workDir(opts.Dir, "weir-traefik-")
	if err != nil {
		return nil, fmt.Errorf("start traefik: %w", err)
	}
	opts.Dir = dir
	tr := &Traefik{Dir: opts.Dir, opts: opts, ownDir: ownDir, originURL: originURL, dyn: d, gen: 1, done: make(chan struct{})}
	if err := tr.prepare(); err != nil {
		tr.removeDir()
		return nil, fmt.Errorf("start traefik: %w", err)
	}
	out, err := os.Create(tr.OutPath)
	if err != nil {
		tr.removeDir()
		return nil, fmt.Errorf("start traefik: %w", err)
	}
	tr.cmd = exec.Command(opts.Binary, "--configFile="+filepath.Join(tr.Dir, "traefik.yml"))
	tr.cmd.Dir = tr.Dir
	tr.cmd.Stdout = out
	tr.cmd.Stderr = out
	dieWithParent(tr.cmd)
	if err := tr.cmd.Start(); err != nil {
		out.Close()
		tr.removeDir()
		return nil, fmt.Errorf("start traefik: %w", err)
	}
	go func() {
		err := tr.cmd.Wait()
		out.Close()
		tr.waitErr = err
		close(tr.done)
	}()

	deadline := time.Now().Add(opts.StartTimeout)
	if err := tr.waitPing(deadline); err != nil {
		return nil, tr.failStart(err)
	}
	if err := tr.waitGeneration(deadline); err != nil {
		return nil, tr.failStart(err)
	}
	return tr, nil
}

// prepare writes everything Traefik reads at start.
func (tr *Traefik) prepare() error {
	if err := CopyPlugin(tr.opts.Root, tr.Dir); err != nil {
		return err
	}
	if err := copyLocalPlugins(tr.opts.LocalPlugins, tr.Dir); err != nil {
		return err
	}
	tr.dynDir = filepath.Join(tr.Dir, "dynamic")
	if err := os.MkdirAll(tr.dynDir, 0o755); err != nil {
		return err
	}
	web, err := freePort()
	if err != nil {
		return err
	}
	api, err := freePort()
	if err != nil {
		return err
	}
	tr.WebURL = fmt.Sprintf("http://127.0.0.1:%d", web)
	tr.APIURL = fmt.Sprintf("http://127.0.0.1:%d", api)
	tr.LogPath = filepath.Join(tr.Dir, "traefik.log")
	tr.OutPath = filepath.Join(tr.Dir, "traefik.out")
	tr.client = newClient()
	provider, plugin, err := providerStatic(tr.opts.Provider)
	if err != nil {
		return err
	}
	plugin += localPluginsStatic(tr.opts.LocalPlugins)
	static := staticConfig(web, api, tr.opts.LogLevel, tr.LogPath, tr.dynDir, tr.opts.TrustForwarded, provider, plugin)
	if len(tr.opts.WebMiddlewares) > 0 {
		// The web entry point's section opens with its address; its http section goes
		// right after it, JSON read as a YAML flow sequence.
		mws, err := json.Marshal(tr.opts.WebMiddlewares)
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("    address: \"127.0.0.1:%d\"\n", web)
		static = strings.Replace(static, addr, addr+"    http:\n      middlewares: "+string(mws)+"\n", 1)
	}
	if err := os.WriteFile(filepath.Join(tr.Dir, "traefik.yml"), []byte(static), 0o644); err != nil {
		return err
	}
	return writeDynamic(tr.dynDir, tr.Dir, tr.originURL, tr.dyn, tr.gen)
}

func (tr *Traefik) failStart(err error) error {
	stopErr := tr.Stop()
	return fmt.Errorf("start traefik: %w (stop: %v)\n%s", err, stopErr, tr.LogTail(40))
}

// staticConfig is Traefik's static configuration: the web entry point for routers, the
// traefik entry point with the API, pprof (api.debug) and ping, the file provider watching
// the dynamic directory, and Weir as a local plugin that must load (abortOnPluginFailure).
// The provider throttle is off so a reload is applied as soon as the file changes; a short
// grace period keeps Stop quick. trust makes the web entry point trust 127.0.0.1's
// forwarded headers. provider and plugin, from providerStatic, add Weir's provider plugin;
// plugin also carries the entries of Options.LocalPlugins (localPluginsStatic).
func staticConfig(web, api int, level, logPath, dynDir string, trust bool, provider, plugin string) string {
	forwarded := ""
	if trust {
		forwarded = `
    forwardedHeaders:
      trustedIPs: ["127.0.0.1/32"]`
	}
	return fmt.Sprintf(`global:
  checkNewVersion: false
  sendAnonymousUsage: false
entryPoints:
  web:
    address: "127.0.0.1:%d"%s
    transport:
      lifeCycle:
        graceTimeOut: 1s
  traefik:
    address: "127.0.0.1:%d"
    transport:
      lifeCycle:
        graceTimeOut: 1s
api:
  insecure: true
  debug: true
  dashboard: false
ping: {}
log:
  level: %s
  filePath: %q
providers:
  providersThrottleDuration: 0s
  file:
    directory: %q
    watch: true%s
experimental:
  abortOnPluginFailure: true
  localPlugins:
    %s:
      moduleName: %s%s
`, web, forwarded, api, level, logPath, dynDir, provider, PluginName, ModuleName, plugin)
}

// ProviderAlias is the alias Weir's provider plugin is declared under in the harness's
// static configuration (experimental.localPlugins.weirp): its presets are published as
// <name>@plugin-weirp.
const ProviderAlias = "weirp"

// providerStatic is what loads Weir's provider plugin with block: its entry under
// providers (provider) and under experimental.localPlugins (plugin), both "" for a nil
// block. The block is written as JSON, which YAML reads as a flow mapping.
func providerStatic(block map[string]interface{}) (provider, plugin string, err error) {
	if block == nil {
		return "", "", nil
	}
	data, err := json.Marshal(block)
	if err != nil {
		return "", "", fmt.Errorf("provider block: %w", err)
	}
	provider = fmt.Sprintf("\n  plugin:\n    %s: %s", ProviderAlias, data)
	plugin = fmt.Sprintf("\n    %s:\n      moduleName: %s", ProviderAlias, ProviderModuleName)
	return provider, plugin, nil
}

// Apply replaces the dynamic configuration and returns once Traefik serves it: the marker
// router of the new generation answers and every router of d is enabled.
func (tr *Traefik) Apply(d Dynamic) error {
	tr.gen++
	tr.dyn = d
	if err := writeDynamic(tr.dynDir, tr.Dir, tr.originURL, d, tr.gen); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if err := tr.waitGeneration(time.Now().Add(tr.opts.ReloadTimeout)); err != nil {
		return fmt.Errorf("reload to generation %d: %w", tr.gen, err)
	}
	return nil
}

// Generation is the number of the dynamic configuration last applied, starting at 1.
func (tr *Traefik) Generation() int { return tr.gen }

// Pid is the Traefik process's id.
func (tr *Traefik) Pid() int { return tr.cmd.Process.Pid }

// URL is the web entry point's URL for path.
func (tr *Traefik) URL(path string) string { return tr.WebURL + path }

// Client is an HTTP client for the entry points: no proxy, no transparent compression, a
// large keep-alive pool and bounded waits.
func (tr *Traefik) Client() *http.Client { return tr.client }

// Exited reports whether the process has ended.
func (tr *Traefik) Exited() bool { return closed(tr.done) }

// Stop ends Traefik: SIGTERM, then SIGKILL if it has not exited within stopGrace. It
// removes the working directory if Start created it. Calling it again does nothing.
func (tr *Traefik) Stop() error {
	defer tr.removeDir()
	if tr.cmd == nil || tr.cmd.Process == nil {
		return nil
	}
	if tr.Exited() {
		return nil
	}
	_ = tr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-tr.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = tr.cmd.Process.Kill()
	select {
	case <-tr.done:
		return fmt.Errorf("stop traefik: killed after %v without exiting on SIGTERM", stopGrace)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stop traefik: pid %d survives SIGKILL", tr.cmd.Process.Pid)
	}
}

func (tr *Traefik) removeDir() {
	if tr.ownDir {
		os.RemoveAll(tr.Dir)
		tr.ownDir = false
	}
}

// exitError describes how the process ended. Traefik exits 0 only when told to stop, so a
// clean exit the harness did not ask for means a signal from outside.
func (tr *Traefik) exitError() error {
	if tr.waitErr == nil {
		return fmt.Errorf("%w with status 0: something else signalled it to stop (its log says \"I have to go...\")", errExited)
	}
	return fmt.Errorf("%w: %v", errExited, tr.waitErr)
}

// handedOut holds the ports freePort has returned: a port is free when picked but stays
// unbound until its user starts (a Traefik entry point, a Redis left down on purpose), and
// the kernel may offer it again meanwhile.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: make(map[int]bool)}

// freePort returns a 127.0.0.1 port nothing listens on and no caller of this process has
// been given before.
func freePort() (int, error) {
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if handOut(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("free port: the kernel kept offering ports already handed out")
}

// handOut records port as given to a caller of this process: false when it was before.
func handOut(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

func newClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			DisableCompression:  true,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}
