package webhooks

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// DefaultSchedule is the delay before each retry, as Standard Webhooks
// suggests: a message is tried at once and then after these, for a day
// and a bit in all.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Config are the webhook settings (BUREAU_WEBHOOK_*).
type Config struct {
	// Schedule are the delays before each retry (BUREAU_WEBHOOK_RETRY_SCHEDULE).
	Schedule []time.Duration
	// DisableAfter: an endpoint failing this long, at least MinFailures
	// times in a row, is disabled (BUREAU_WEBHOOK_DISABLE_AFTER).
	DisableAfter time.Duration
	// Allow are the refused ranges webhooks may reach all the same
	// (BUREAU_WEBHOOK_ALLOW_PRIVATE).
	Allow []netip.Prefix
	// Keep is how long finished deliveries are kept (BUREAU_WEBHOOK_KEEP_DAYS).
	Keep time.Duration
}

// MinFailures is how many attempts in a row must fail before an endpoint
// is disabled.
const MinFailures = 5

// ParseConfig reads the settings as the environment gives them ("" and
// 0: defaults).
func ParseConfig(schedule, disableAfter, allow string, keepDays int) (Config, error) {
	c := Config{Schedule: DefaultSchedule, DisableAfter: 24 * time.Hour, Keep: 7 * 24 * time.Hour}
	if keepDays < 0 {
		return c, fmt.Errorf("BUREAU_WEBHOOK_KEEP_DAYS=%d: want a number of days, 1 or more", keepDays)
	} else if keepDays > 0 {
		c.Keep = time.Duration(keepDays) * 24 * time.Hour
	}
	if s := strings.TrimSpace(schedule); s != "" {
		c.Schedule = nil
		for _, f := range strings.Split(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return c, fmt.Errorf("BUREAU_WEBHOOK_RETRY_SCHEDULE=%q: %q is not a positive duration (want e.g. 5s,5m,30m)", schedule, f)
			}
			c.Schedule = append(c.Schedule, d)
		}
	}
	if s := strings.TrimSpace(disableAfter); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("BUREAU_WEBHOOK_DISABLE_AFTER=%q: want a positive duration such as 24h", disableAfter)
		}
		c.DisableAfter = d
	}
	for _, f := range strings.Split(allow, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return c, fmt.Errorf("%s=%q: %q is neither a CIDR nor an address", AllowPrivateSetting, allow, f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.Allow = append(c.Allow, p.Masked())
	}
	return c, nil
}

// next is when a delivery that has now failed its attempts-th attempt is
// tried again, false when the schedule is spent.
func (c Config) next(now time.Time, attempts int) (time.Time, bool) {
	if attempts < 1 || attempts > len(c.Schedule) {
		return time.Time{}, false
	}
	return now.Add(c.Schedule[attempts-1]), true
}
