package placement

import "slices"

// Choose filters hosts for r and returns the one weighing most: the sum
// of its free memory after reservations, its free disk and how few
// desktops it runs, each scaled to 0–1 across the hosts that fit (as
// Nova's weighers are). Ties go to the earlier host in hosts (list the
// local one first). A *NoHostError says why each host was refused.
func (p Policy) Choose(hosts []Host, r Request) (Host, error) {
	var fit []Host
	var refused []Refusal
	for _, h := range hosts {
		if err := p.Fits(h, r); err != nil {
			refused = append(refused, Refusal{h.Name, err.Error()})
			continue
		}
		fit = append(fit, h)
	}
	if len(fit) == 0 {
		return Host{}, &NoHostError{Refusals: refused}
	}
	mem := scaled(fit, func(h Host) float64 { return float64(p.FreeMiB(h)) })
	disk := scaled(fit, func(h Host) float64 { return float64(h.FreeDiskMiB - int64(h.Creating)*r.DiskMiB) })
	few := scaled(fit, func(h Host) float64 { return -float64(h.Desktops) })
	best, bestScore := 0, -1.0
	for i := range fit {
		if s := mem[i] + disk[i] + few[i]; s > bestScore {
			best, bestScore = i, s
		}
	}
	return fit[best], nil
}

// scaled maps each host's value to 0–1 between the least and the most
// among hosts; all the same, it is 0 for all (it decides nothing).
func scaled(hosts []Host, value func(Host) float64) []float64 {
	vs := make([]float64, len(hosts))
	for i, h := range hosts {
		vs[i] = value(h)
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	for i, v := range vs {
		if hi > lo {
			vs[i] = (v - lo) / (hi - lo)
		} else {
			vs[i] = 0
		}
	}
	return vs
}
