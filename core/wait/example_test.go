package wait_test

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/wait"
)

// A wait for a result bounded by a timer, as a select of two receives would be.
func ExampleEither() {
	result := make(chan string, 1)
	result <- "fetched"
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	switch wait.Either(result, timer.C) {
	case 0:
		fmt.Println("result before the bound")
	case 1:
		fmt.Println("timed out")
	}
	// Output:
	// result before the bound
}

// A wake-up that never blocks its sender, and its receipt that never blocks the loop.
func ExamplePoke() {
	wake := make(chan struct{}, 1)
	fmt.Println(wait.Poke(wake), wait.Poke(wake))
	fmt.Println(wait.Ready(wake), wait.Ready(wake))
	// Output:
	// true false
	// true false
}
