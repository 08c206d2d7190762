// Command democonf writes the demo's Traefik dynamic configuration (package democonf) as
// YAML on standard output:
//
//	go run ./cmd/democonf -store redis://127.0.0.1:6399/0 > dynamic.yml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/weirproxy/weir/testmod/democonf"
)

func main() {
	store := flag.String("store", "", "Redis URL of the shared store (empty: the cache in Traefik's memory)")
	flag.Parse()
	conf, err := democonf.Dynamic(democonf.Options{StoreURL: *store})
	if err == nil {
		var out []byte
		if out, err = democonf.YAML(conf); err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "democonf:", err)
		os.Exit(1)
	}
}
