package desktop

import (
	"errors"
	"testing"
)

func TestQuotaCheckNamesTheLimitPassed(t *testing.T) {
	q := Quota{Plan: "custom", MaxDesktops: 3, MaxSnapshots: 2}
	if err := q.Check(Usage{Desktops: 3, Snapshots: 2, DiskMiB: 1 << 30}); err != nil {
		t.Errorf("at the limits (disk unlimited): %v", err)
	}
	var qe *QuotaError
	if err := q.Check(Usage{Desktops: 1}.Plus(Usage{Snapshots: 3})); !errors.As(err, &qe) || qe.Limit != "snapshots" || qe.Max != 2 || qe.Would != 3 {
		t.Errorf("a third snapshot: %v", err)
	}
	var ve *ValidationError
	if err := ValidateQuota(Quota{Plan: "custom", MaxSnapshots: -1}); !errors.As(err, &ve) || ve.Field != "max_snapshots" {
		t.Errorf("negative snapshot limit: %v", err)
	}
}
