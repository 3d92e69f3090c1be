package decode

import "time"

// metav1RFC3339Micro is metav1.RFC3339Micro, the layout of audit timestamps.
const metav1RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// parseMicroTimeUTC parses the canonical form the API server writes,
// "2006-01-02T15:04:05.000000Z", without allocating. ok is false for anything else, which the
// caller then hands to time.Parse so that both paths accept exactly the same inputs.
func parseMicroTimeUTC(b []byte) (t time.Time, ok bool) {
	if len(b) != 27 || b[19] != '.' {
		return time.Time{}, false
	}
	return parseRFC3339Z(b)
}

// parseRFC3339Z parses "2006-01-02T15:04:05[.fraction]Z" with up to nine fractional digits.
func parseRFC3339Z(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[len(b)-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nanos := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(20, len(b)-1)
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nanos = n
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(secs, int64(nanos)).UTC(), true
}

// daysFromCivil returns days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// algorithm), cheaper than time.Date on the hot path.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	if y < 0 {
		y -= 399
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// hourCache remembers the date and hour of the last canonical timestamp: consecutive audit
// timestamps share "2006-01-02T15", so only minutes, seconds and microseconds need parsing.
type hourCache struct {
	prefix [13]byte
	base   int64 // Unix seconds at the start of that hour
	valid  bool
}

// parse is parseMicroTimeUTC with the date and hour taken from the cache when they match; it
// accepts exactly what parseMicroTimeUTC accepts.
func (c *hourCache) parse(b []byte) (time.Time, bool) {
	if len(b) != 27 || b[26] != 'Z' {
		return time.Time{}, false
	}
	if !c.valid || string(b[:13]) != string(c.prefix[:]) {
		t, ok := parseMicroTimeUTC(b)
		if ok {
			copy(c.prefix[:], b[:13])
			c.base = t.Unix() - int64(t.Minute()*60+t.Second())
			c.valid = true
		}
		return t, ok
	}
	if b[13] != ':' || b[16] != ':' || b[19] != '.' {
		return time.Time{}, false
	}
	m1, m2, s1, s2 := b[14]-'0', b[15]-'0', b[17]-'0', b[18]-'0'
	if m1 > 5 || m2 > 9 || s1 > 5 || s2 > 9 {
		return time.Time{}, false
	}
	micro := 0
	for _, c := range b[20:26] {
		d := c - '0'
		if d > 9 {
			return time.Time{}, false
		}
		micro = micro*10 + int(d)
	}
	secs := c.base + int64(m1)*600 + int64(m2)*60 + int64(s1)*10 + int64(s2)
	return time.Unix(secs, int64(micro)*1000).UTC(), true
}
