package provider

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/weirproxy/weir"
)

// FuzzDecodePreset: whatever a preset holds, decodePreset returns an error or a Config
// whose published plugin section decodes back onto the very same Config, with no name
// weir.Config lacks.
func FuzzDecodePreset(f *testing.F) {
	for _, seed := range []string{
		`{}`, `""`, `null`, `"8"`,
		`{"limiter":{"maxConcurrent":"8"}}`,
		`{"Limiter":{"MAXCONCURRENT":8}}`,
		`{"key":{"queryDrop":["utm_source","utm_medium"]},"pacing":"a.example.com=3/10s"}`,
		`{"admin":{"path":"/_weir","allow":"127.0.0.1/32"},"cache":{"allowPurge":true}}`,
		`{"limitter":{}}`, `{"limiter":"x"}`, `{"limiter":{"maxConcurrent":{"a":1}}}`,
		`{"warm":{"paths":[["/"]]}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var raw interface{}
		if err := json.Unmarshal([]byte(data), &raw); err != nil {
			return
		}
		c, conf, err := decodePreset(raw)
		if err != nil {
			return
		}
		published, err := json.Marshal(conf)
		if err != nil {
			t.Fatalf("encode %v: %v", conf, err)
		}
		back := weir.CreateConfig()
		dec := json.NewDecoder(bytes.NewReader(published))
		dec.DisallowUnknownFields()
		if err := dec.Decode(back); err != nil {
			t.Fatalf("published %s does not decode onto weir.Config: %v", published, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("published %s decodes to %+v, want %+v", published, back, c)
		}
	})
}
