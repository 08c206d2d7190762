package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// bookHorizon is how far ahead of the server's clock a bucket's booking is believed (its
// microseconds are written in bookScript): a value further ahead, written by someone else
// with access to the server, is read as no booking and replaced.
const bookHorizon = 24 * time.Hour

// bookScript adds requests to shared budgets' buckets on the server's clock (TIME), so that
// instances whose clocks differ count alike: each bucket is the time it is booked up to, in
// microseconds (a Lua number holds them exactly), and expires a second after it. ARGV[1] is
// one request's interval in microseconds, ARGV[i+1] the requests to add to KEYS[i]; the
// reply is how far past now each bucket is booked, in microseconds. Integers only, in and
// out (statusReply).
var bookScript = newScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv = tonumber(ARGV[1])
local out = {}
for i, k in ipairs(KEYS) do
  local tat = now
  local v = redis.call('GET', k)
  if v then
    local n = tonumber(v)
    -- A booking further ahead than bookHorizon is none the fleet made: read as none.
    if n and n > now and n - now <= 86400000000 then tat = n end
  end
  tat = tat + tonumber(ARGV[i + 1]) * iv
  redis.call('SET', k, string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
  out[i] = math.floor(tat - now)
end
return out
`)

// Book implements store.Booker: one script call for every key, under the key prefix.
func (s *Store) Book(ctx context.Context, keys []string, counts []int64, interval time.Duration) ([]time.Duration, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	args := make([]interface{}, 0, 3+2*len(keys))
	args = append(args, nil, len(keys))
	for _, k := range keys {
		args = append(args, s.prefix+k)
	}
	iv := interval.Microseconds()
	if iv < 1 {
		iv = 1
	}
	args = append(args, strconv.FormatInt(iv, 10))
	for _, n := range counts {
		args = append(args, strconv.FormatInt(n, 10))
	}
	reply, err := s.eval(ctx, bookScript, args)
	if err != nil {
		return nil, fmt.Errorf("redis book: %w", err)
	}
	parts, ok := reply.([]interface{})
	if !ok || len(parts) != len(keys) {
		return nil, fmt.Errorf("redis book: %w %v", errReply, reply)
	}
	ahead := make([]time.Duration, len(parts))
	for i, p := range parts {
		us, ok := p.(int64)
		if !ok {
			return nil, fmt.Errorf("redis book: %w %v", errReply, reply)
		}
		ahead[i] = time.Duration(us) * time.Microsecond
	}
	return ahead, nil
}
