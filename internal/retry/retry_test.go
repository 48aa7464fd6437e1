package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDo(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name      string
		tries     int
		failFirst int  // calls that fail before success
		final     bool // failures are final
		wantCalls int
		wantErr   error
	}{
		{"succeeds at once", 3, 0, false, 1, nil},
		{"succeeds on the third", 3, 2, false, 3, nil},
		{"gives up after the tries", 3, 5, false, 3, boom},
		{"a final error stops at once", 3, 5, true, 1, boom},
		{"at least one try", 0, 5, false, 1, boom},
	} {
		calls := 0
		err := Do(context.Background(), c.tries, time.Millisecond, func() (bool, error) {
			calls++
			if calls <= c.failFirst {
				return !c.final, boom
			}
			return false, nil
		})
		if calls != c.wantCalls || !errors.Is(err, c.wantErr) && err != c.wantErr {
			t.Errorf("%s: %d calls, %v; want %d calls, %v", c.name, calls, err, c.wantCalls, c.wantErr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Do(ctx, 3, time.Hour, func() (bool, error) { return true, boom }); !errors.Is(err, context.Canceled) {
		t.Errorf("a context ended during the pause: %v", err)
	}
}
