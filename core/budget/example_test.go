package budget_test

import (
	"fmt"
	"time"

	"github.com/weirproxy/weir/core/budget"
)

func Example() {
	rate, err := budget.ParseRate("20/10s")
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := budget.New(budget.Settings{Rate: rate, Burst: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fmt.Println(budget.Take(t, "192.0.2.1", now), budget.Take(t, "192.0.2.1", now), budget.Take(t, "192.0.2.1", now))
	fmt.Println(budget.Take(t, "192.0.2.1", now.Add(500*time.Millisecond)))
	// Output:
	// 0s 0s 500ms
	// 0s
}
