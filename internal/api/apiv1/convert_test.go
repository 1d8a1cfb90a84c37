package apiv1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bureau/bureau/internal/desktop"
	"github.com/bureau/bureau/internal/loop"
	"github.com/bureau/bureau/internal/teams"
)

// fill sets every settable field of v (a pointer) to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1700000000, 0)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(7)
	}
}

// zeroFields lists the fields of v (a struct, followed through pointers
// and the first element of slices) left at their zero value.
func zeroFields(v reflect.Value, path string) []string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return []string{path}
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		return zeroFields(v.Index(0), path+"[0]")
	case v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Time{}):
		var out []string
		for i := 0; i < v.NumField(); i++ {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case v.IsZero():
		return []string{path}
	}
	return nil
}

// TestConvertersCarryEveryField: from a domain value with every field
// set, each converter sets every field of the API type (a field added to
// an API type and forgotten in its converter fails here).
func TestConvertersCarryEveryField(t *testing.T) {
	conv := map[string]func() any{
		"Desktop": func() any {
			var d desktop.Desktop
			fill(reflect.ValueOf(&d))
			out := FromDesktop(&d)
			out.SetReadiness(true, time.Now(), "session", "x") // not the record's: bureau follows it
			var c loop.Control
			fill(reflect.ValueOf(&c))
			out.SetPeople(FromControl(c), true, 2) // nor these
			return out
		},
		"Event":        func() any { var e desktop.Event; fill(reflect.ValueOf(&e)); return FromEvent(&e) },
		"Image":        func() any { var im desktop.Image; fill(reflect.ValueOf(&im)); return FromImage(&im) },
		"Snapshot":     func() any { var sn desktop.Snapshot; fill(reflect.ValueOf(&sn)); return FromSnapshot(&sn) },
		"Token":        func() any { var tk desktop.Token; fill(reflect.ValueOf(&tk)); return FromToken(&tk) },
		"ConsoleToken": func() any { var ct desktop.ConsoleToken; fill(reflect.ValueOf(&ct)); return FromConsoleToken(&ct) },
		"Share":        func() any { var sh desktop.Share; fill(reflect.ValueOf(&sh)); return FromShare(&sh) },
		"Secret":       func() any { var se desktop.Secret; fill(reflect.ValueOf(&se)); return FromSecret(&se) },
		"Quota":        func() any { var q desktop.Quota; fill(reflect.ValueOf(&q)); return FromQuota(q) },
		"Usage":        func() any { var u desktop.Usage; fill(reflect.ValueOf(&u)); return FromUsage(u) },
		"Stats":        func() any { var st desktop.VMStats; fill(reflect.ValueOf(&st)); return FromStats(&st) },
		"Network":      func() any { var p desktop.NetworkPolicy; fill(reflect.ValueOf(&p)); return FromNetworkPolicy(p) },
		"Backup":       func() any { var b desktop.Backup; fill(reflect.ValueOf(&b)); return FromBackup(&b) },
		"BackupTarget": func() any { var bt desktop.BackupTarget; fill(reflect.ValueOf(&bt)); return FromBackupTarget(&bt) },
		"BackupSchedule": func() any {
			var bs desktop.BackupSchedule
			fill(reflect.ValueOf(&bs))
			return FromBackupSchedule(&bs)
		},
		"Request": func() any {
			var r loop.Request
			fill(reflect.ValueOf(&r))
			r.Action.Detail = json.RawMessage(`{"command":["rm"]}`) // fill leaves bytes zero
			return FromRequest(&r)
		},
		"Control": func() any { var c loop.Control; fill(reflect.ValueOf(&c)); return FromControl(c) },
		"Team": func() any {
			var tm teams.Team
			fill(reflect.ValueOf(&tm))
			tm.Members = []teams.Member{{}}
			fill(reflect.ValueOf(&tm.Members[0]))
			return FromTeam(&tm, teams.RoleAdmin)
		},
		"TeamSummary": func() any { var tm teams.Team; fill(reflect.ValueOf(&tm)); return SummaryOfTeam(&tm, teams.RoleViewer) },
		"BackupCheck": func() any {
			var bc desktop.BackupCheck
			fill(reflect.ValueOf(&bc))
			bc.Took = 7 * time.Millisecond // fill's 7 ns rounds to 0 ms
			return FromBackupCheck(&bc)
		},
	}
	for name, f := range conv {
		if zero := zeroFields(reflect.ValueOf(f()), name); len(zero) > 0 {
			t.Errorf("%s: converter leaves %v unset", name, zero)
		}
	}
	var q Quota
	fill(reflect.ValueOf(&q))
	if back := FromQuota(q.ToQuota()); back != q {
		t.Errorf("quota round trip: %+v != %+v", back, q)
	}
	var p NetworkPolicy
	fill(reflect.ValueOf(&p))
	if back := FromNetworkPolicy(p.ToNetworkPolicy()); !reflect.DeepEqual(back, p) {
		t.Errorf("network policy round trip: %+v != %+v", back, p)
	}
}

// TestNilIsNil: converters of a nil domain value give nil, which JSON
// writes as null, not a zero-valued object.
func TestNilIsNil(t *testing.T) {
	if FromDesktop(nil) != nil || FromRequest(nil) != nil || FromEvent(nil) != nil || FromStats(nil) != nil || FromToken(nil) != nil ||
		FromBackup(nil) != nil || FromBackupTarget(nil) != nil || FromBackupCheck(nil) != nil ||
		FromBackupSchedule(nil) != nil {
		t.Error("a nil domain value converts to a non-nil API value")
	}
}

// TestBackupTargetShowsNoSecret: a target's secret key never reaches the
// wire, and a dir target has no s3 part.
func TestBackupTargetShowsNoSecret(t *testing.T) {
	s3 := FromBackupTarget(&desktop.BackupTarget{Name: "nas", Kind: desktop.TargetS3,
		S3: desktop.S3Location{Endpoint: "nas:9000", Bucket: "b", AccessKey: "AK", SecretKey: "sekrit"}})
	b, _ := json.Marshal(s3)
	if strings.Contains(string(b), "sekrit") || !strings.Contains(string(b), `"access_key":"AK"`) {
		t.Errorf("s3 target on the wire: %s", b)
	}
	dir := FromBackupTarget(&desktop.BackupTarget{Name: "local", Kind: desktop.TargetDir, Dir: "/srv/backups"})
	if b, _ := json.Marshal(dir); strings.Contains(string(b), `"s3"`) {
		t.Errorf("dir target on the wire: %s", b)
	}
	if c := FromBackupCheck(&desktop.BackupCheck{OK: true}); c.Missing == nil || c.Corrupt == nil {
		t.Errorf("a check's lists are null: %+v", c)
	}
}
