// Package console keeps what the admin page's overview draws, in bounded memory: a ring of
// one sample a second over fifteen minutes (Series), and tables of the busiest keys, hosts
// or partitions, over the same fifteen minutes (Table). It knows nothing of HTTP or of the
// engine: the engine feeds it counts read from counters it keeps anyway, off the hit path.
package console
