// Package wait waits on channels for Weir's interpreted code, in place of Go's select
// statement.
//
// Yaegi v0.16.1 builds the cases of a select statement once, in one array per statement,
// fills in each run's channels, then calls reflect.Select on that array: every goroutine
// running the same statement shares it. Two requests waiting in the same select at once
// can each wait on, and receive from, the other's channels: a follower's timer fired for
// another follower, whose 300ms coalesce.followerMaxWait then never ended its wait; a
// connection pool's token was taken by a wait on another pool (docs/yaegi.md, "A select
// statement's cases are shared"). reflect.Select on cases made for each wait is compiled
// code and shares nothing, and reflect.Value's TryRecv and TrySend stand for a select with
// a default.
//
// A channel is passed as an interface value; a nil interface, or a nil channel, is never
// ready, as a nil channel's case in a select.
package wait

import "reflect"

// Either waits until a receive from a or b can proceed, makes it, and returns 0 for a's,
// 1 for b's. Either, EitherValue and Any each build their own cases rather than share a
// helper: under Yaegi each call in between would cost every wait a frame.
func Either(a, b interface{}) int {
	i, _, _ := reflect.Select([]reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b)},
	})
	return i
}

// EitherValue is Either that returns the value received too (the element type's zero value
// when the channel is closed).
func EitherValue(a, b interface{}) (int, reflect.Value) {
	i, v, _ := reflect.Select([]reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b)},
	})
	return i, v
}

// Any is Either for three channels: 0, 1 or 2; a nil one stands for a channel not waited on.
// Three parameters, not a variadic list: under Yaegi the list and its loop cost a miss 13
// allocations more (BenchmarkLimiterMiss).
func Any(a, b, c interface{}) int {
	i, _, _ := reflect.Select([]reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(a)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)},
	})
	return i
}

// Ready receives from ch if it can without waiting: a value was waiting, or ch is closed.
// It is `select { case <-ch: return true; default: return false }`.
func Ready(ch interface{}) bool {
	v := reflect.ValueOf(ch)
	if !v.IsValid() || v.IsNil() {
		return false
	}
	x, ok := v.TryRecv()
	// TryRecv: ok with a value received; not ok with a valid zero value when ch is closed,
	// not ok with the zero Value when a receive would wait.
	return ok || x.IsValid()
}

// Poke sends the element type's zero value on ch if it can without waiting (a wake-up to a
// loop that may already have one pending), and tells whether it did. It is
// `select { case ch <- struct{}{}: default: }`. A closed ch panics, as a send does.
func Poke(ch interface{}) bool {
	v := reflect.ValueOf(ch)
	if !v.IsValid() || v.IsNil() {
		return false
	}
	return v.TrySend(reflect.Zero(v.Type().Elem()))
}
