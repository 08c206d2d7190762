package provider

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// within bounds every wait of these tests.
const within = 5 * time.Second

func newProvider(t *testing.T) *Provider {
	t.Helper()
	p, err := New(context.Background(), &Config{Presets: map[string]interface{}{"weir-default": "", "weir-api": apiPreset()}}, "plugin-weirp")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return p
}

// receive takes one configuration from ch, as Traefik's reader does.
func receive(t *testing.T, ch chan json.Marshaler) json.Marshaler {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(within):
		t.Fatalf("Provide: nothing published: hangs after %v", within)
		return nil
	}
}

func TestProvidePublishesOnce(t *testing.T) {
	p := newProvider(t)
	ch := make(chan json.Marshaler)
	if err := p.Provide(ch); err != nil {
		t.Fatalf("Provide: %v", err)
	}
	m := receive(t, ch)
	data, err := m.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	for _, want := range []string{`"weir-api":{"plugin":{"weir":{`, `"maxConcurrent":"8"`, `"weir-default":`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("published %s, want it to contain %s", data, want)
		}
	}
	if err := p.Provide(ch); err == nil {
		t.Errorf("second Provide before Stop: err = nil, want %v", errProviding)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Stop has returned, so the publishing goroutine has ended: nothing more can come.
	select {
	case again := <-ch:
		t.Errorf("published a second time: %v", again)
	default:
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestStopEndsGoroutines runs the provider through 100 starts, half of them stopped before
// Traefik took the configuration (the publishing goroutine blocked on its send), and checks
// that the goroutine count is back where it began.
func TestStopEndsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		p := newProvider(t)
		ch := make(chan json.Marshaler)
		if err := p.Provide(ch); err != nil {
			t.Fatalf("Provide %d: %v", i, err)
		}
		if i%2 == 0 {
			receive(t, ch)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- p.Stop() }()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("Stop %d: %v", i, err)
			}
		case <-time.After(within):
			t.Fatalf("Stop %d: hangs after %v", i, within)
		}
	}
	// A goroutine that has closed its done channel may still be on its way out: wait for
	// the count rather than read it once.
	deadline := time.Now().Add(within)
	after := runtime.NumGoroutine()
	for after > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before {
		t.Errorf("goroutines after 100 starts and stops = %d, want at most %d as before", after, before)
	}
	t.Logf("goroutines: %d before, %d after 100 starts and stops", before, after)
}

func TestNewRefusesABadBlock(t *testing.T) {
	bad := section1("cache", "maxSize", "lots")
	_, err := New(context.Background(), &Config{Presets: map[string]interface{}{"weir-static": bad}}, "plugin-weirp")
	if err == nil || !strings.Contains(err.Error(), `presets.weir-static: weir: invalid configuration: cache.maxSize: "lots"`) {
		t.Errorf("New: err = %v, want the preset, the field and the value named", err)
	}
}
