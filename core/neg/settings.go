package neg

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/setting"
)

// Defaults applied to zero Settings fields.
const (
	// DefaultTTL is how long a failure is remembered (FR-NEG-1): long enough to absorb a
	// burst of requests for a key the origin cannot serve, short enough that a recovered
	// origin is noticed at once.
	DefaultTTL = 2 * time.Second
	// DefaultMaxEntries bounds how many failures are remembered at once, so that a flood of
	// failing keys cannot grow memory without bound.
	DefaultMaxEntries = 10000
)

// Errors returned by this package.
var (
	// ErrInvalidSetting wraps every Settings validation error.
	ErrInvalidSetting = errors.New("invalid setting")
)

// Settings tune a negative cache. The zero value of every field selects its default.
type Settings struct {
	// TTL is how long a failure is remembered. Zero: DefaultTTL.
	TTL time.Duration
	// MaxEntries bounds how many keys are remembered at once; when full, the oldest entry
	// makes room. Zero: DefaultMaxEntries.
	MaxEntries int
}

// Validate reports the first setting out of range, naming the field and its value.
func (s Settings) Validate() error {
	if s.TTL < 0 {
		return fmt.Errorf("negative.ttl: %v must not be negative: %w", s.TTL, ErrInvalidSetting)
	}
	if s.MaxEntries < 0 {
		return fmt.Errorf("negative.maxEntries: %d must not be negative: %w", s.MaxEntries, ErrInvalidSetting)
	}
	return nil
}

// withDefaults returns s with every zero field set to its default. It is the one place
// defaults are applied.
func (s Settings) withDefaults() Settings {
	s.TTL = setting.Duration(s.TTL, DefaultTTL)
	s.MaxEntries = setting.Int(s.MaxEntries, DefaultMaxEntries)
	return s
}
