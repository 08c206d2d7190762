package events

import (
	"errors"
	"strconv"
	"strings"
)

// kv is one key and value read back from a line.
type kv struct {
	key, val string
}

// parseLogfmt reads a line as Weir writes it: key=value pairs separated by one space, a value
// bare (up to the next space) or quoted with JSON's escapes.
func parseLogfmt(line string) ([]kv, error) {
	var out []kv
	for i := 0; i < len(line); {
		eq := strings.IndexByte(line[i:], '=')
		if eq <= 0 {
			return nil, errors.New("no key at " + strconv.Itoa(i))
		}
		key := line[i : i+eq]
		if strings.ContainsAny(key, " \"") {
			return nil, errors.New("bad key " + strconv.Quote(key))
		}
		i += eq + 1
		var val string
		if i < len(line) && line[i] == '"' {
			end := i + 1
			for end < len(line) && line[end] != '"' {
				if line[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(line) {
				return nil, errors.New("unterminated quote for " + key)
			}
			v, err := strconv.Unquote(line[i : end+1])
			if err != nil {
				return nil, errors.New("bad quoted value for " + key + ": " + err.Error())
			}
			val = v
			i = end + 1
		} else {
			end := strings.IndexByte(line[i:], ' ')
			if end < 0 {
				end = len(line) - i
			}
			val = line[i : i+end]
			if val == "" || strings.Contains(val, "\"") {
				return nil, errors.New("bad bare value for " + key)
			}
			i += end
		}
		out = append(out, kv{key, val})
		if i < len(line) {
			if line[i] != ' ' {
				return nil, errors.New("no space after " + key)
			}
			i++
			if i == len(line) {
				return nil, errors.New("trailing space")
			}
		}
	}
	return out, nil
}

func valueOf(kvs []kv, key string) string {
	for _, p := range kvs {
		if p.key == key {
			return p.val
		}
	}
	return ""
}
