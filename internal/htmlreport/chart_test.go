package htmlreport

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{250 * time.Millisecond, "250ms"}, {15 * time.Second, "15s"}, {1500 * time.Millisecond, "1.5s"},
		{10 * time.Minute, "10m"}, {90 * time.Second, "1m30s"}, {2 * time.Hour, "2h"}, {2*time.Hour + 30*time.Minute, "2h30m"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestTicksAreRoundAndBounded(t *testing.T) {
	from := time.Date(2026, 11, 21, 4, 4, 45, 689e6, time.UTC)
	for _, span := range []time.Duration{300 * time.Millisecond, 12 * time.Second, 5*time.Minute + 38*time.Second, 26 * time.Hour, 40 * 24 * time.Hour} {
		ticks, step := TimeScale{From: from, To: from.Add(span), X0: 0, X1: 100}.Ticks()
		if len(ticks) == 0 || len(ticks) > maxTicks {
			t.Errorf("span %s: %d ticks, want 1 to %d", span, len(ticks), maxTicks)
		}
		for _, tk := range ticks {
			if tk.Before(from) || tk.After(from.Add(span)) || !tk.Equal(tk.Truncate(step)) {
				t.Errorf("span %s: tick %s outside the span or off the %s step", span, tk, step)
			}
		}
	}
}
