package redisstore

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gomodule/redigo/redis"
	"github.com/weirproxy/weir/core/store"
)

// Tags and purges (store.Purger) in Redis.
//
// A purge must reach every Weir sharing the server, so the index lives in Redis beside the
// entries, under the key prefix: a set per tag, prefix+"\x00tag:"+tag, and a set per
// primary key whose variants are stored, prefix+"\x00var:"+key, each holding cache keys
// (without the prefix). The index's names begin with a NUL byte, as no cache key does, so
// no purge by a URL's prefix reaches them; purging "" drops them with everything else.
//
// An entry with tags, or a variant, is stored with SET and indexed by a script
// (indexScript, EVALSHA), both sent in one round trip (setIndexed). A set lives at least as
// long as its longest-lived member: its expiry is pushed to the entry's, never pulled in,
// with PTTL and PEXPIRE in the script (PEXPIRE's GT option would leave a new set, which has
// no expiry, without one, and needs Redis 7). A set still in use keeps being pushed,
// so the script also prunes: it draws two members of each set it adds to, and removes those
// whose entry is gone. Each entry stored adds one member and, while a fraction d of the
// members are dead, removes 2d on average, so the dead settle at about half of a busy set
// (at most about as many as the live members), whatever the traffic. A member whose entry
// was replaced by one without the tag is not found by that check: it stays until the set
// expires or a purge takes it, and that purge drops the entry (one more fetch from the
// origin, never a stale answer); at most one such member per key in the database.
//
// A purge takes members out of a set with SPOP and deletes their entries in the same
// script (purgeScript), in batches: an entry stored meanwhile is either taken and deleted or
// stays indexed, and a batch sent twice (do repeats a command on a broken connection) only
// deletes the next one. A purge by prefix walks the keyspace with SCAN MATCH, never KEYS,
// and deletes what it finds with UNLINK, batch by batch. Every purge drops this process's
// near copies of what it deleted as each batch returns; other processes drop theirs on the
// server's invalidations, as for any write.
//
// The sets are under the key prefix, so every instance's tracking connection is told of
// their changes too: each entry stored adds a key per tag to the invalidations, which the
// near tier looks up and does not find.
//
// Scripts need Redis 5 or later (a write after SPOP or SRANDMEMBER in a script: effects
// replication) and run on one server: they name the entries' keys from the sets' members,
// which a cluster refuses (keys of other slots). In a cluster the index is kept with
// per-key commands instead (cluster.go): clusterIndexScript touches its one set, and
// purges delete with one UNLINK per slot.

const (
	// tagSet and variantSet begin the names of the index's sets, after the key prefix.
	tagSet     = "\x00tag:"
	variantSet = "\x00var:"
	// purgeBatch is how many members a purge takes out of a set per command.
	purgeBatch = 500
	// scanCount is SCAN's COUNT: how many keys of the keyspace a purge by prefix reads per
	// command; the server answers with those that match.
	scanCount = 1000
)

// indexScript adds a stored entry to its index sets.
var indexScript = newScript(`
-- KEYS: the index sets the entry joins. ARGV[1]: its time to live in ms.
-- ARGV[2]: the key prefix. ARGV[3]: the cache key, each set's member.
local ttl = tonumber(ARGV[1])
for i = 1, #KEYS do
  for _, m in ipairs(redis.call('SRANDMEMBER', KEYS[i], 2)) do
    if redis.call('EXISTS', ARGV[2] .. m) == 0 then
      redis.call('SREM', KEYS[i], m)
    end
  end
  redis.call('SADD', KEYS[i], ARGV[3])
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
  end
end
return #KEYS
`)

// clusterIndexScript adds a stored entry to one index set, in a cluster: the script may
// touch no other key, so the members it draws for pruning are returned for the caller to
// check (setIndexedCluster).
var clusterIndexScript = newScript(`
-- KEYS[1]: the index set. ARGV[1]: the entry's time to live in ms. ARGV[2]: the cache key.
-- Returns up to two members drawn before the key was added.
local drawn = redis.call('SRANDMEMBER', KEYS[1], 2)
redis.call('SADD', KEYS[1], ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return drawn
`)

// purgeScript takes members out of an index set and deletes their entries.
var purgeScript = newScript(`
-- KEYS[1]: an index set. ARGV[1]: how many members to take. ARGV[2]: the key prefix.
-- Returns how many entries it deleted, and the members it took.
local taken = redis.call('SPOP', KEYS[1], ARGV[1])
local keys = {}
for i, m in ipairs(taken) do
  keys[i] = ARGV[2] .. m
end
local n = 0
if #keys > 0 then
  n = redis.call('UNLINK', unpack(keys))
end
return {n, taken}
`)

// script is a Lua script and its SHA1 digest, by which EVALSHA names it.
type script struct {
	src, sha string
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// errReply is a reply of a shape the command does not give.
var errReply = errors.New("unexpected reply")

// globEscaper escapes the characters that SCAN's MATCH pattern gives a meaning to.
var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)

// eval runs sc with args, whose first element is left for the script: by its digest, and
// with its source when the server does not hold it yet (noScript).
func (s *Store) eval(ctx context.Context, sc script, args []interface{}) (interface{}, error) {
	args[0] = sc.sha
	reply, err := s.do(ctx, "EVALSHA", args...)
	if noScript(err) {
		args[0] = sc.src
		reply, err = s.do(ctx, "EVAL", args...)
	}
	return reply, err
}

// noScript tells whether err is the server's answer to EVALSHA for a script it does not
// hold: its first use, a restarted server, SCRIPT FLUSH.
func noScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// setIndexed stores the encoded entry b under key for ms milliseconds, then adds key to the
// sets of its tags and, for a variant, of its primary key (see store.Memory's index): SET and
// EVALSHA indexScript in one round trip. The entry goes to the server as SET's argument, not
// the script's: Lua copies its arguments, so an entry passed through a script would cost
// Redis a copy of it on every store.
//
// The two are not one atomic step: a purge that runs between them misses the entry, which
// a purge running while an entry is stored may do (store.Purger). Should the index fail
// after the SET, the entry is deleted again, so that no entry is kept that purges cannot find.
func (s *Store) setIndexed(ctx context.Context, key string, tags []string, b []byte, ms int64) error {
	if s.cluster != nil {
		return s.setIndexedCluster(ctx, key, tags, b, ms)
	}
	idx := make([]interface{}, 3, 3+1+len(tags)+3)
	idx[0] = "EVALSHA"
	idx[1] = indexScript.sha
	idx = append(idx, s.indexSets(key, tags)...)
	idx[2] = len(idx) - 3
	idx = append(idx, ms, s.prefix, key)
	reply, err := s.doThen(ctx, "SET", []interface{}{s.prefix + key, b, "PX", ms}, idx)
	if noScript(err) {
		idx[1] = indexScript.src
		reply, err = s.do(ctx, "EVAL", idx[1:]...)
	}
	if err == nil {
		if _, ok := reply.(int64); !ok {
			err = fmt.Errorf("%w %v", errReply, reply)
		}
	}
	if err != nil {
		s.do(ctx, "DEL", s.prefix+key)
		return fmt.Errorf("redis set: %w", err)
	}
	return nil
}

// indexSets names the index sets an entry under key with tags joins: its primary key's
// set for a variant, and each tag's.
func (s *Store) indexSets(key string, tags []string) []interface{} {
	sets := make([]interface{}, 0, 1+len(tags))
	if i := strings.IndexByte(key, 0); i > 0 {
		sets = append(sets, s.prefix+variantSet+key[:i])
	}
	for _, t := range tags {
		sets = append(sets, s.prefix+tagSet+t)
	}
	return sets
}

// setIndexedCluster is setIndexed in a cluster, one key per command: the SET, then for each
// index set clusterIndexScript, and the members it drew whose entry is gone removed with
// SREM (the pruning indexScript does inside Redis on a single server).
func (s *Store) setIndexedCluster(ctx context.Context, key string, tags []string, b []byte, ms int64) error {
	reply, err := s.do(ctx, "SET", s.prefix+key, b, "PX", ms)
	if err == nil && reply != "OK" {
		err = fmt.Errorf("%w %v", errReply, reply)
	}
	if err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	for _, set := range s.indexSets(key, tags) {
		reply, err := s.eval(ctx, clusterIndexScript, []interface{}{nil, 1, set, ms, key})
		if err != nil {
			s.do(ctx, "DEL", s.prefix+key)
			return fmt.Errorf("redis set: index: %w", err)
		}
		drawn, _ := reply.([]interface{})
		for _, m := range drawn {
			member, ok := m.([]byte)
			if !ok || string(member) == key {
				continue
			}
			if n, err := s.do(ctx, "EXISTS", s.prefix+string(member)); err == nil && n == int64(0) {
				s.do(ctx, "SREM", set, member)
			}
		}
	}
	return nil
}

// PurgeKey implements store.Purger: the entry under key, then the variants in key's set.
func (s *Store) PurgeKey(ctx context.Context, key string) (int, error) {
	reply, err := s.do(ctx, "UNLINK", s.prefix+key)
	s.nearDrop(key)
	if err != nil {
		return 0, fmt.Errorf("redis purge key: %w", err)
	}
	n, ok := reply.(int64)
	if !ok {
		return 0, fmt.Errorf("redis purge key: %w %v", errReply, reply)
	}
	m, err := s.purgeSet(ctx, s.prefix+variantSet+key)
	if err != nil {
		return int(n) + m, fmt.Errorf("redis purge key: %w", err)
	}
	return int(n) + m, nil
}

// PurgeTag implements store.Purger: every member of the tag's set, which goes with its last
// member.
func (s *Store) PurgeTag(ctx context.Context, tag string) (int, error) {
	if tag == "" {
		return 0, nil
	}
	n, err := s.purgeSet(ctx, s.prefix+tagSet+tag)
	if err != nil {
		return n, fmt.Errorf("redis purge tag: %w", err)
	}
	return n, nil
}

// purgeSet empties an index set, deleting the entries it names, purgeBatch at a time.
func (s *Store) purgeSet(ctx context.Context, set string) (int, error) {
	if s.cluster != nil {
		return s.purgeSetCluster(ctx, set)
	}
	total := 0
	args := []interface{}{nil, 1, set, purgeBatch, s.prefix}
	for {
		reply, err := s.eval(ctx, purgeScript, args)
		if err != nil {
			return total, err
		}
		parts, ok := reply.([]interface{})
		if !ok || len(parts) != 2 {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		n, ok := parts[0].(int64)
		taken, ok2 := parts[1].([]interface{})
		if !ok || !ok2 {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		total += int(n)
		s.nearDropKeys(taken, 0)
		if len(taken) < purgeBatch {
			return total, nil
		}
	}
}

// purgeSetCluster is purgeSet in a cluster: SPOP a batch of members, then UNLINK their
// entries, one command per slot.
func (s *Store) purgeSetCluster(ctx context.Context, set string) (int, error) {
	total := 0
	for {
		reply, err := s.do(ctx, "SPOP", set, purgeBatch)
		if err != nil {
			return total, err
		}
		taken, ok := reply.([]interface{})
		if !ok {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		keys := make([]interface{}, 0, len(taken))
		for _, m := range taken {
			if b, ok := m.([]byte); ok {
				keys = append(keys, s.prefix+string(b))
			}
		}
		n, err := s.unlinkBySlot(ctx, keys)
		total += int(n)
		s.nearDropKeys(taken, 0)
		if err != nil {
			return total, err
		}
		if len(taken) < purgeBatch {
			return total, nil
		}
	}
}

// PurgePrefix implements store.Purger: SCAN for the keys under the key prefix and prefix,
// its glob characters escaped, and UNLINK each batch found; in a cluster, on every
// primary. The index's own sets are deleted when they match (only "" and prefixes
// beginning with a NUL byte reach them), but not counted.
func (s *Store) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	n, err := s.scanAll(ctx, globEscaper.Replace(s.prefix+prefix)+"*", nil)
	if err != nil {
		return n, fmt.Errorf("redis purge prefix: %w", err)
	}
	return n, nil
}

// Sweep deletes the entries whose cache keys match the glob match (SCAN's MATCH syntax,
// under the key prefix, which Sweep adds) and that drop, when not nil, says to delete; in
// a cluster, on every primary. It walks the keyspace with SCAN, never KEYS, and deletes
// with UNLINK batch by batch, so it holds the server no longer than a purge by prefix
// does; ctx bounds the whole walk. The index's sets (keys beginning with a NUL byte) are
// never swept. It returns how many entries it deleted.
func (s *Store) Sweep(ctx context.Context, match string, drop func(key string) bool) (int, error) {
	if drop == nil {
		drop = func(string) bool { return true }
	}
	n, err := s.scanAll(ctx, globEscaper.Replace(s.prefix)+match, drop)
	if err != nil {
		return n, fmt.Errorf("redis sweep: %w", err)
	}
	return n, nil
}

// scanAll deletes what scanPurge finds for the glob match (the store's keys, prefix
// included) and drop keeps, on the one server or on every primary of a cluster, and
// returns how many it deleted, with what it deleted before an error.
func (s *Store) scanAll(ctx context.Context, match string, drop func(key string) bool) (int, error) {
	if s.cluster == nil {
		return s.scanPurge(ctx, match, nil, drop)
	}
	total := 0
	err := s.eachPrimary(func(c redis.Conn) error {
		n, err := s.scanPurge(ctx, match, c, drop)
		total += n
		return err
	})
	return total, err
}

// sweptOnly keeps of keys (as SCAN returned them, with the key prefix) the entries, never
// an index set, whose cache keys drop says to delete.
func (s *Store) sweptOnly(keys []interface{}, drop func(key string) bool) ([]interface{}, error) {
	kept := keys[:0]
	for _, k := range keys {
		b, ok := k.([]byte)
		if !ok || len(b) < len(s.prefix) {
			return nil, fmt.Errorf("%w %v", errReply, k)
		}
		key := string(b[len(s.prefix):])
		if key == "" || key[0] == 0 || !drop(key) {
			continue
		}
		kept = append(kept, b)
	}
	return kept, nil
}

// scanPurge walks the keys matching match with SCAN, on node when it is not nil (a cluster's
// primary) or the server, and deletes what it finds: only the entries drop names, when it
// is not nil (Sweep).
func (s *Store) scanPurge(ctx context.Context, match string, node redis.Conn, drop func(key string) bool) (int, error) {
	cursor := "0"
	total := 0
	for {
		var reply interface{}
		var err error
		if node == nil {
			reply, err = s.do(ctx, "SCAN", cursor, "MATCH", match, "COUNT", scanCount)
		} else {
			reply, err = s.nodeDo(ctx, node, "SCAN", cursor, "MATCH", match, "COUNT", scanCount)
		}
		if err != nil {
			return total, err
		}
		parts, ok := reply.([]interface{})
		if !ok || len(parts) != 2 {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		next, ok := parts[0].([]byte)
		keys, ok2 := parts[1].([]interface{})
		if !ok || !ok2 {
			return total, fmt.Errorf("%w %v", errReply, reply)
		}
		if drop != nil && len(keys) > 0 {
			if keys, err = s.sweptOnly(keys, drop); err != nil {
				return total, err
			}
		}
		if len(keys) > 0 {
			n, err := s.unlinkFound(ctx, keys)
			total += n
			if err != nil {
				return total, err
			}
		}
		cursor = string(next)
		if cursor == "0" {
			return total, nil
		}
	}
}

// nodeDo sends one command on c, a connection to one node, within ctx and Timeout.
func (s *Store) nodeDo(ctx context.Context, c redis.Conn, cmd string, args ...interface{}) (interface{}, error) {
	timeout, err := s.callTimeout(ctx)
	if err != nil {
		return nil, err
	}
	return do(c, timeout, cmd, args...)
}

// unlinkFound deletes the keys a SCAN found, and returns how many of them were entries.
func (s *Store) unlinkFound(ctx context.Context, keys []interface{}) (int, error) {
	entries := make([]interface{}, 0, len(keys))
	var sets []interface{}
	tags, variants := []byte(s.prefix+tagSet), []byte(s.prefix+variantSet)
	for _, k := range keys {
		b, ok := k.([]byte)
		if !ok {
			return 0, fmt.Errorf("%w %v", errReply, k)
		}
		if bytes.HasPrefix(b, tags) || bytes.HasPrefix(b, variants) {
			sets = append(sets, b)
			continue
		}
		entries = append(entries, b)
	}
	n := int64(0)
	if len(entries) > 0 {
		var err error
		n, err = s.unlink(ctx, entries)
		s.nearDropKeys(entries, len(s.prefix))
		if err != nil {
			return 0, err
		}
	}
	if len(sets) > 0 {
		if _, err := s.unlink(ctx, sets); err != nil {
			return int(n), err
		}
	}
	return int(n), nil
}

// unlink deletes keys and returns how many existed: one UNLINK, or one per slot in a
// cluster.
func (s *Store) unlink(ctx context.Context, keys []interface{}) (int64, error) {
	if s.cluster != nil {
		return s.unlinkBySlot(ctx, keys)
	}
	reply, err := s.do(ctx, "UNLINK", keys...)
	if err != nil {
		return 0, err
	}
	n, ok := reply.(int64)
	if !ok {
		return 0, fmt.Errorf("%w %v", errReply, reply)
	}
	return n, nil
}

// nearDropKeys removes the near copies of keys (as the server returned them, []byte, each
// with cut bytes of prefix in front) and fails fills under way: this process deleted them.
func (s *Store) nearDropKeys(keys []interface{}, cut int) {
	if s.near == nil || len(keys) == 0 {
		return
	}
	atomic.AddInt64(&s.nearGen, 1)
	s.markMoved()
	for _, k := range keys {
		if b, ok := k.([]byte); ok && len(b) >= cut {
			s.near.Delete(context.Background(), string(b[cut:]))
		}
	}
}

var _ store.Purger = (*Store)(nil)
