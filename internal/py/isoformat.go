package py

import "time"

// ISOFormat is Python's datetime.isoformat() of a local time: microseconds,
// which are left out when they are zero.
func ISOFormat(t time.Time) string {
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}
