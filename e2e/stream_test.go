package e2e

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServerSentEvents: a streamed answer reaches the client event by event, not when the
// origin finishes.
func TestServerSentEvents(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/sse/a", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	})
	tr := startTraefik(t, o, cachedRoute("sse", "/sse", "weir-sse", specConfig(t)))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tr.URL("/sse/a"), nil)
	req.Header.Set("Accept", "text/event-stream")
	began := time.Now()
	resp, err := tr.Client().Do(req)
	if err != nil {
		t.Fatalf("GET /sse/a: %v", err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)

	first, err := readEvent(events)
	firstAt := time.Since(began)
	if err != nil || first != "data: one" {
		t.Fatalf("first event = %q, %v; want \"data: one\"", first, err)
	}
	if firstAt >= time.Second {
		t.Errorf("first event arrived after %v, want it before the origin's 2s pause ends (< 1s)", firstAt)
	}
	second, err := readEvent(events)
	if err != nil || second != "data: two" {
		t.Errorf("second event = %q, %v; want \"data: two\"", second, err)
	}
	t.Logf("first event after %v, second after %v", firstAt.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// readEvent reads one server-sent event: lines up to a blank line.
func readEvent(r *bufio.Reader) (string, error) {
	var lines []string
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" && err == nil && len(lines) > 0 {
			return strings.Join(lines, "\n"), nil
		}
		if line != "" {
			lines = append(lines, line)
		}
		if err != nil {
			return strings.Join(lines, "\n"), err
		}
	}
}

// websocketGUID is the key suffix of RFC 6455 §1.3.
const websocketGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// TestWebSocketUpgrade: an Upgrade request passes through Weir, the client sees 101 and
// bytes then flow both ways on the connection.
func TestWebSocketUpgrade(t *testing.T) {
	o := newOrigin(t)
	o.Handle("/ws/echo", func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + websocketGUID))
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		rw.Flush()
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		rw.WriteString("echo " + line)
		rw.Flush()
	})
	tr := startTraefik(t, o, cachedRoute("ws", "/ws", "weir-ws", specConfig(t)))

	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(tr.WebURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	const key = "dGhlIHNhbXBsZSBub25jZQ==" // RFC 6455 §1.3's example
	io.WriteString(conn, "GET /ws/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: "+key+"\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the upgrade answer: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer status = %d, want 101", resp.StatusCode)
	}
	if got, want := resp.Header.Get("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="; got != want {
		t.Errorf("Sec-WebSocket-Accept = %q, want %q", got, want)
	}
	io.WriteString(conn, "ping\n")
	echo, err := br.ReadString('\n')
	if err != nil || echo != "echo ping\n" {
		t.Errorf("after 101: read %q, %v; want \"echo ping\\n\"", echo, err)
	}
	wantCount(t, o, "/ws/echo", 1)
}

// TestTruncatedAnswer: when the origin drops the connection in the middle of a body, the
// client sees an incomplete message through Weir as through bare Traefik (RFC 9112 section
// 8): a streamed answer is aborted (no last chunk, a body short of its Content-Length), a
// held one is a 502. Nothing of it is stored: the next request reaches the origin and gets
// the whole answer.
func TestTruncatedAnswer(t *testing.T) {
	const (
		stream = iota // Weir streams the answer: the client's read fails as through bare Traefik
		held          // Weir holds the answer to store it: the client gets a 502
	)
	tests := []struct {
		desc string
		// header is the origin's header fields, name and value pairs; reqHeader the client's.
		header    []string
		reqHeader []string
		// size is the whole body's length, declared in Content-Length when length is set;
		// the origin's first answer for a path breaks off after cut bytes: more than
		// Traefik's 2KiB write buffer, so that bare Traefik has sent the answer's start
		// (had it sent nothing, the Go client would retry the GET and never see the cut).
		size   int
		length bool
		cut    int
		want   int
	}{
		{desc: "no-store, chunked", header: []string{"Cache-Control", "no-store"}, size: 20000, cut: 5000, want: stream},
		{desc: "no-store, Content-Length", header: []string{"Cache-Control", "no-store"}, size: 20000, length: true, cut: 5000, want: stream},
		{desc: "over maxEntrySize by Content-Length", header: []string{"Cache-Control", "max-age=60"}, size: 20000, length: true, cut: 5000, want: stream},
		{desc: "over maxEntrySize found while reading", header: []string{"Cache-Control", "max-age=60"}, size: 20000, cut: 10000, want: stream},
		{desc: "server-sent events", header: []string{"Cache-Control", "max-age=60", "Content-Type", "text/event-stream"}, size: 20000, cut: 5000, want: stream},
		{desc: "with credentials", header: []string{"Cache-Control", "max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 20000, cut: 5000, want: stream},
		{desc: "storable, chunked", header: []string{"Cache-Control", "max-age=60"}, size: 4000, cut: 3000, want: held},
		{desc: "storable, Content-Length", header: []string{"Cache-Control", "max-age=60"}, size: 4000, length: true, cut: 3000, want: held},
		{desc: "storable with credentials", header: []string{"Cache-Control", "public, max-age=60"}, reqHeader: []string{"Authorization", "Bearer a"}, size: 4000, cut: 3000, want: held},
	}
	o := newOrigin(t)
	conf := specConfig(t)
	conf["cache"] = map[string]interface{}{"maxSize": "32MiB", "maxEntrySize": "4KiB"}
	tr := startTraefik(t, o, Dynamic{
		Routes: []Route{
			{Name: "cut", Rule: "PathPrefix(`/cut`)", Middleware: "weir-cut"},
			{Name: "bare", Rule: "PathPrefix(`/bare`)"},
		},
		Middlewares: map[string]map[string]interface{}{"weir-cut": conf},
	})
	for i, tc := range tests {
		tc := tc
		path := "/cut/" + strconv.Itoa(i)
		barePath := "/bare/cut/" + strconv.Itoa(i)
		whole := strings.Repeat("w", tc.size)
		cutFirst := func(w http.ResponseWriter, r *http.Request) {
			for j := 0; j+1 < len(tc.header); j += 2 {
				w.Header().Set(tc.header[j], tc.header[j+1])
			}
			if tc.length {
				w.Header().Set("Content-Length", strconv.Itoa(tc.size))
			}
			if o.Count(r.URL.Path) > 1 {
				io.WriteString(w, whole)
				return
			}
			io.WriteString(w, whole[:tc.cut])
			w.(http.Flusher).Flush()
			// net/http closes the connection in the middle of the body.
			panic(http.ErrAbortHandler)
		}
		o.Handle(path, cutFirst)
		o.Handle(barePath, cutFirst)
		t.Run(tc.desc, func(t *testing.T) {
			bare := fetchWhole(t, tr, barePath, tc.reqHeader)
			if !errors.Is(bare.err, io.ErrUnexpectedEOF) {
				t.Fatalf("bare Traefik: %d, %d bytes, then %v; want %v", bare.status, len(bare.body), bare.err, io.ErrUnexpectedEOF)
			}
			t.Logf("bare Traefik: %d, %d bytes, then %v", bare.status, len(bare.body), bare.err)

			got := fetchWhole(t, tr, path, tc.reqHeader)
			t.Logf("Weir: %d, %q, %d bytes, then %v", got.status, got.header.Get("Cache-Status"), len(got.body), got.err)
			switch tc.want {
			case stream:
				if !errors.Is(got.err, io.ErrUnexpectedEOF) {
					t.Errorf("Weir: %d, %d bytes, then %v; want %v, as through bare Traefik", got.status, len(got.body), got.err, io.ErrUnexpectedEOF)
				}
			case held:
				if got.err != nil || got.status != http.StatusBadGateway {
					t.Errorf("Weir: %d, %d bytes, read error %v; want a whole 502", got.status, len(got.body), got.err)
				}
			}
			again := fetchWhole(t, tr, path, tc.reqHeader)
			if again.err != nil || again.status != 200 || again.body != whole {
				t.Errorf("next answer: %d, %d bytes, read error %v; want 200, %d bytes", again.status, len(again.body), again.err, tc.size)
			}
			wantCount(t, o, path, 2)
		})
	}
	// Weir's abort must reach net/http as http.ErrAbortHandler itself, which Traefik's
	// recovery ends silently, not as a crash logged with its stack.
	if log := tr.LogTail(1000); strings.Contains(log, "Recovered from panic") {
		t.Errorf("Traefik logged a recovered panic, want silent aborts:\n%s", log)
	}
}

// wholeReply is what a client got back, with the error that ended its read of the body.
type wholeReply struct {
	status int
	header http.Header
	body   string
	err    error
}

// fetchWhole GETs path through Traefik and reads the body to its end, keeping the error a
// broken message ends with (send fails the test on it).
func fetchWhole(t *testing.T, tr *Traefik, path string, header []string) wholeReply {
	t.Helper()
	fields := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		fields[header[i]] = header[i+1]
	}
	r, err := fetch(context.Background(), tr.Client(), requestTimeout, http.MethodGet, tr.URL(path), fields)
	if r.status == 0 {
		t.Fatalf("GET %s: %v", path, err)
	}
	return wholeReply{status: r.status, header: r.header, body: r.body, err: err}
}
