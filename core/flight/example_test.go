package flight_test

import (
	"fmt"

	"github.com/weirproxy/weir/core/flight"
)

// Two callers ask for the same key: the first leads and runs the fetch, the second waits on
// the same flight and gets the same result.
func Example() {
	g := flight.New(flight.Settings{})

	c, leader := flight.Join(g, "/index.html")
	fmt.Println("first caller leads:", leader)

	f, leader := flight.Join(g, "/index.html")
	fmt.Println("second caller leads:", leader, "followers:", g.Followers(c))

	flight.Run(g, "/index.html", c, func() (interface{}, error) {
		return "<h1>hello</h1>", nil
	})
	<-flight.Done(f)
	v, err := flight.Result(f)
	fmt.Println("second caller got:", v, err)
	fmt.Println("flights in the air:", g.InFlight())
	// Output:
	// first caller leads: true
	// second caller leads: false followers: 1
	// second caller got: <h1>hello</h1> <nil>
	// flights in the air: 0
}

// A panic in the fetch reaches every waiter as an error wrapping ErrPanic.
func ExampleRun_panic() {
	g := flight.New(flight.Settings{OnPanic: func(key string, r interface{}) {
		fmt.Println("recovered for", key+":", r)
	}})
	c, _ := flight.Join(g, "k")
	flight.Run(g, "k", c, func() (interface{}, error) { panic("origin handler bug") })
	<-flight.Done(c)
	_, err := flight.Result(c)
	fmt.Println(err)
	// Output:
	// recovered for k: origin handler bug
	// flight: fetch panicked: origin handler bug
}
