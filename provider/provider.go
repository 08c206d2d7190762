// Package provider is Weir's Traefik provider plugin. From one block of static configuration
// (providers.plugin.<alias>) it publishes named Weir middleware presets, <name>@plugin-<alias>,
// that labels and entry points can reference, and an optional admin router, so a Traefik
// configured only with Docker labels needs neither a file provider nor an unrelated
// container's labels for a shared middleware.
//
// Traefik interprets it with Yaegi, in an interpreter of its own beside the middleware's:
// New, Init, Provide and Stop are its contract. Presets are checked with the middleware's
// own parser (weir's Config.Check), so a preset the provider accepts is one the middleware
// accepts.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/traefik/genconf/dynamic"
)

// The provider's sentinel errors.
var (
	// errConfig wraps every error in the provider's block, which names the preset or the
	// admin field and the value.
	errConfig = errors.New("weir provider: invalid configuration")
	// errProviding is Provide called while an earlier Provide has not been stopped.
	errProviding = errors.New("weir provider: already providing; Stop first")
)

// CreateConfig returns the configuration Traefik decodes the provider's block onto.
func CreateConfig() *Config {
	return &Config{}
}

// Provider publishes the dynamic configuration built from its block.
type Provider struct {
	// payload is held as the interface the channel carries: Yaegi v0.16.1 fails a select's
	// send of a pointer to an interpreted struct on a channel of an interface type
	// (docs/yaegi.md).
	payload json.Marshaler

	// mu guards run, the publishing goroutine of the Provide not yet stopped.
	mu  sync.Mutex
	run *publisher
}

// publisher is one Provide's goroutine: it hands the configuration over once, or gives up
// when stopped.
type publisher struct {
	stop    chan struct{}
	done    chan struct{}
	stopped int32 // set before stop is closed
}

// New checks the block and builds what the provider publishes. An error names the preset
// (presets.<name>) or admin field and the value; Traefik then does not start, as with any
// error in its static configuration, and reports it once.
func New(ctx context.Context, config *Config, name string) (*Provider, error) {
	conf, err := Build(config)
	if err != nil {
		return nil, err
	}
	var payload json.Marshaler = &dynamic.JSONPayload{Configuration: conf}
	return &Provider{payload: payload}, nil
}

// Init does nothing: New has checked and built everything.
func (p *Provider) Init() error { return nil }

// Provide publishes the configuration once, on a goroutine of its own that ends as soon as
// Traefik has taken it or Stop is called. The block is static configuration: it changes only
// with a restart, so the provider publishes only then, never the same configuration again.
func (p *Provider) Provide(cfgChan chan<- json.Marshaler) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		return errProviding
	}
	run := &publisher{stop: make(chan struct{}), done: make(chan struct{})}
	p.run = run
	go publish(run, cfgChan, p.payload)
	return nil
}

// publish hands payload over on cfgChan, or returns once run is stopped.
func publish(run *publisher, cfgChan chan<- json.Marshaler, payload json.Marshaler) {
	defer close(run.done)
	// A panic on an interpreted goroutine would end Traefik (docs/yaegi.md).
	defer func() { _ = recover() }()
	for {
		// yaegilint:shared-select: Yaegi v0.16.1 shares a select's cases between every
		// goroutine running it (docs/yaegi.md), and core/wait cannot send payload (an
		// interpreted type behind an interface) through reflect. One goroutine per
		// Provider runs this; only two provider blocks starting together could mix their
		// sends.
		select {
		case cfgChan <- payload:
			return
		case <-run.stop:
			// Believed only with the flag Stop sets first: the channel may have been
			// another Provider's (above).
			if atomic.LoadInt32(&run.stopped) == 1 {
				return
			}
		}
	}
}

// Stop ends the goroutine Provide started and returns once it has ended. Calling it again,
// or before Provide, does nothing.
func (p *Provider) Stop() error {
	p.mu.Lock()
	run := p.run
	p.run = nil
	p.mu.Unlock()
	if run == nil {
		return nil
	}
	atomic.StoreInt32(&run.stopped, 1)
	close(run.stop)
	<-run.done
	return nil
}
