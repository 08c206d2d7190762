package events

import (
	"fmt"
	"testing"
	"time"
)

func TestRecentKeepsTheLastEventsNewestFirst(t *testing.T) {
	k := &Recent{}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l, err := New(Settings{Middleware: "m", Now: func() time.Time { return now }, Recent: k})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < RecentSize+100; i++ {
		host := "a.example.com"
		if i%2 == 1 {
			host = "b.example.com"
		}
		l.Emit(BreakerOpened, Str("scope", host), Int("n", i))
	}
	l.Emit(PacingSet, Str("name", "a.example.com"))
	all := k.Newest(0, nil)
	if len(all) != RecentSize {
		t.Fatalf("kept: got %d, want %d", len(all), RecentSize)
	}
	if all[0].Name != PacingSet || all[1].Value("n") != fmt.Sprint(RecentSize+99) {
		t.Errorf("newest: got %s then n=%s, want %s then n=%d", all[0].Name, all[1].Value("n"), PacingSet, RecentSize+99)
	}
	if all[0].Level != LevelInfo || all[1].Level != LevelWarn {
		t.Errorf("levels: got %s, %s, want info, warn", all[0].Level, all[1].Level)
	}
	if all[0].Seq != RecentSize+101 {
		t.Errorf("seq: got %d, want %d", all[0].Seq, RecentSize+101)
	}
	b := k.Newest(3, func(r Record) bool { return r.Value("scope") == "b.example.com" })
	if len(b) != 3 || b[0].Value("n") != fmt.Sprint(RecentSize+99) || b[2].Value("n") != fmt.Sprint(RecentSize+95) {
		t.Errorf("filtered: got %+v, want n=%d, %d, %d", b, RecentSize+99, RecentSize+97, RecentSize+95)
	}
	var none *Recent
	if got := none.Newest(0, nil); len(got) != 0 {
		t.Errorf("nil Recent: got %v, want none", got)
	}
}
