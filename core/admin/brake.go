package admin

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// The brake's limits.
const (
	// BrakeFailures is how many failed attempts a client address may make within
	// BrakeWindow; past them it gets 429 until the window ends.
	BrakeFailures = 10
	// BrakeWindow is the window failures are counted over, from a client's first failure.
	BrakeWindow = time.Minute
	// DefaultBrakeClients bounds the client addresses a brake tracks; past it the address
	// whose window began first is forgotten.
	DefaultBrakeClients = 4096
)

// Brake counts failed attempts to present the token by client address and holds back an
// address that failed BrakeFailures times within BrakeWindow until that window ends: a
// brake on guessing, which a long token makes hopeless anyway. An IPv6 address counts by
// its /64, which one host commonly holds whole. Its memory is bounded: at most its size of
// addresses, the oldest window forgotten first. The zero value is not usable; a nil Brake
// holds no one back. Safe for concurrent use.
type Brake struct {
	max int
	// mu guards clients and order.
	mu sync.Mutex
	// clients maps an address to its element in order, whose Value is a *brakeClient.
	clients map[string]*list.Element
	// order holds the addresses by the start of their window, oldest first.
	order *list.List
}

// brakeClient is one address's failures in its window.
type brakeClient struct {
	client string
	start  time.Time
	n      int
}

// NewBrake returns a brake tracking at most max addresses (max <= 0: DefaultBrakeClients).
func NewBrake(max int) *Brake {
	if max <= 0 {
		max = DefaultBrakeClients
	}
	return &Brake{max: max, clients: make(map[string]*list.Element), order: list.New()}
}

// wait is how long client is held back at now: zero when it may try.
func (b *Brake) wait(client string, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	el := b.clients[client]
	if el == nil {
		return 0
	}
	c := el.Value.(*brakeClient)
	end := c.start.Add(BrakeWindow)
	if !now.Before(end) {
		b.order.Remove(el)
		delete(b.clients, client)
		return 0
	}
	if c.n < BrakeFailures {
		return 0
	}
	return end.Sub(now)
}

// fail counts a failed attempt of client at now and returns its failures in the window.
func (b *Brake) fail(client string, now time.Time) int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if el := b.clients[client]; el != nil {
		c := el.Value.(*brakeClient)
		if now.Before(c.start.Add(BrakeWindow)) {
			c.n++
			return c.n
		}
		// A new window: the latest start, so the back of the order.
		c.start = now
		c.n = 1
		b.order.MoveToBack(el)
		return 1
	}
	b.clients[client] = b.order.PushBack(&brakeClient{client: client, start: now, n: 1})
	for b.order.Len() > b.max {
		oldest := b.order.Front()
		b.order.Remove(oldest)
		delete(b.clients, oldest.Value.(*brakeClient).client)
	}
	return 1
}

// Len is how many addresses the brake tracks.
func (b *Brake) Len() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// clientKey is the address the brake counts a RemoteAddr under: its IP, an IPv6 one by its
// /64 ("2001:db8::/64"); the RemoteAddr as it is when it holds none.
func clientKey(remote string) string {
	ip := remoteIP(remote)
	if ip == nil {
		return remote
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
