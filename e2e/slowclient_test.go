package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowRoutes: /slow through a middleware whose clients.bodyIdle is a second, with one upload
// slot, and its admin for the metrics.
func slowRoutes() Dynamic {
	return cachedRoute("slow", "/slow", "weir-slow", map[string]interface{}{
		"clients": map[string]interface{}{"bodyIdle": "1s"},
		"limiter": map[string]interface{}{"maxUpload": "1", "maxQueueWait": "500ms"},
		"admin":   map[string]interface{}{"path": "/slow/_weir", "token": adminTestToken},
	})
}

// slowMetric reads one sample of the middleware's metrics, as written.
func slowMetric(t *testing.T, tr *Traefik, sample string) string {
	t.Helper()
	r := send(t, tr, "GET", "/slow/_weir/metrics", map[string]string{"Authorization": "Bearer " + adminTestToken})
	for _, line := range strings.Split(r.body, "\n") {
		if strings.HasPrefix(line, sample+" ") {
			return strings.TrimPrefix(line, sample+" ")
		}
	}
	t.Fatalf("metrics lack %s:\n%s", sample, r.body)
	return ""
}

// rawRequest opens a connection to Traefik's web entry point and sends a request head.
func rawRequest(t *testing.T, tr *Traefik, head string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(tr.WebURL, "http://"))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatalf("send head: %v", err)
	}
	return conn
}

// TestSlowClientBody: a client that pauses its upload longer than clients.bodyIdle loses its
// connection and frees its origin slot; one that sends slowly but without a pause that long
// is never cut, however long its upload takes.
func TestSlowClientBody(t *testing.T) {
	o := newOrigin(t)
	var cut int64
	o.Handle("/slow/up", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			atomic.AddInt64(&cut, 1)
			return
		}
		fmt.Fprintf(w, "got %d bytes", len(b))
	})
	tr := startTraefik(t, o, slowRoutes())

	t.Run("a pause longer than bodyIdle", func(t *testing.T) {
		conn := rawRequest(t, tr, "POST /slow/up HTTP/1.1\r\nHost: slow.test\r\nContent-Length: 20\r\n\r\n0123456789")
		began := time.Now()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(conn)
		took := time.Since(began)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the connection stayed open 10s after the upload paused: %q", got)
		}
		if took < 900*time.Millisecond || took > 5*time.Second {
			t.Errorf("connection closed after %s, want about bodyIdle (1s)", took)
		}
		t.Logf("closed after %s with %q (%v)", took, short(string(got)), err)
		if !waitFor(5*time.Second, func() bool { return atomic.LoadInt64(&cut) == 1 }) {
			t.Errorf("the origin's read of the body was not cut (%d)", atomic.LoadInt64(&cut))
		}
		if v := slowMetric(t, tr, `weir_client_body_idle_total`); v != "1" {
			t.Errorf("body-idle timeouts = %s, want 1", v)
		}
		if v := slowMetric(t, tr, `weir_origin_in_flight{pool="upload"}`); v != "0" {
			t.Errorf("upload slots held = %s, want 0: the slot freed", v)
		}
		// The one upload slot is free: the next upload goes through at once.
		r, err := fetchBody(context.Background(), tr.Client(), requestTimeout, "POST", tr.URL("/slow/up"), nil, "0123456789")
		if err != nil || r.status != 200 || r.body != "got 10 bytes" {
			t.Errorf("next upload: %d %q %v, want 200 got 10 bytes", r.status, r.body, err)
		}
	})

	t.Run("slow but moving", func(t *testing.T) {
		conn := rawRequest(t, tr, "POST /slow/up HTTP/1.1\r\nHost: slow.test\r\nContent-Length: 20\r\nConnection: close\r\n\r\n")
		// 20 bytes over 4s, two every 400ms: the whole upload lasts four times bodyIdle.
		for i := 0; i < 10; i++ {
			time.Sleep(400 * time.Millisecond)
			if _, err := io.WriteString(conn, "ab"); err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to the slow upload: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "got 20 bytes" {
			t.Errorf("slow upload: %d %q, want 200 got 20 bytes", resp.StatusCode, b)
		}
	})
}
