package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResolveColl: -coll's list, globs and NAME.fatbin standing for its
// parts NAME_<k>.fatbin in part order (10 after 9), and the errors of a
// value that names no fatbin, or one twice.
func TestResolveColl(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"devcoll_0.fatbin", "devcoll_1.fatbin", "devcoll_10.fatbin", "devcoll_9.fatbin",
		"devcoll_remote_0.fatbin", "devcoll_remote_1.fatbin", "devcoll_x.fatbin", "one.fatbin", "both.fatbin", "both_0.fatbin"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	for _, tc := range []struct {
		spec    string
		want    []string
		wantErr string
	}{
		{spec: p("devcoll.fatbin")[0], want: p("devcoll_0.fatbin", "devcoll_1.fatbin", "devcoll_9.fatbin", "devcoll_10.fatbin")},
		{spec: p("devcoll_remote.fatbin")[0], want: p("devcoll_remote_0.fatbin", "devcoll_remote_1.fatbin")},
		{spec: p("one.fatbin")[0], want: p("one.fatbin")},
		{spec: strings.Join(p("devcoll_1.fatbin", "one.fatbin"), ","), want: p("devcoll_1.fatbin", "one.fatbin")},
		{spec: p("devcoll_remote_[0-9]*.fatbin")[0], want: p("devcoll_remote_0.fatbin", "devcoll_remote_1.fatbin")},
		{spec: p("both.fatbin")[0], wantErr: "both " + p("both.fatbin")[0] + " and its parts"},
		{spec: p("none.fatbin")[0], wantErr: "neither " + p("none.fatbin")[0] + " nor its parts"},
		{spec: p("none_*.fatbin")[0], wantErr: "no file matches"},
		{spec: p("one.fatbin")[0] + ",", wantErr: "empty name"},
		{spec: strings.Join(p("one.fatbin", "one.fatbin"), ","), wantErr: "named twice"},
	} {
		got, err := resolveColl(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "-coll") {
				t.Errorf("resolveColl(%q) = %v, %v; want an error naming -coll and containing %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("resolveColl(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}
