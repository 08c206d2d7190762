package e2e

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net"
	"net/http"
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
	tr := startTraefik(t, o, cachedRoute("sse", "/sse", "weir-sse", specConfig()))

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
	tr := startTraefik(t, o, cachedRoute("ws", "/ws", "weir-ws", specConfig()))

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
