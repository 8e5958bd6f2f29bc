package fabric

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireDevEnv names the variable that makes missing libfabric headers a
// failure of TestABIAgrees instead of a skip. `make test` sets it
// (scripts/deps.sh installs libfabric-dev); so does any CI that sets CI.
const requireDevEnv = "GOSHMEM_REQUIRE_LIBFABRIC_DEV"

// abiDecl is what abi.h declares, read from its text.
type abiDecl struct {
	structs map[string][]string // struct name -> member names, in order
	order   []string            // struct names in order
	consts  []string            // GOSHMEMI_FI_* constants with a libfabric counterpart
}

var (
	reStructOpen = regexp.MustCompile(`^struct (goshmemi_\w+) \{`)
	reFuncPtr    = regexp.MustCompile(`\(\*(\w+)\)\(`)
	reMember     = regexp.MustCompile(`(\w+)(\[\d+\])?;`)
	reDefine     = regexp.MustCompile(`^#define (GOSHMEMI_FI_\w+)\s`)
	reEnumConst  = regexp.MustCompile(`\b(GOSHMEMI_FI_\w+) = `)
)

// notLibfabric are abi.h's own names, with no counterpart to check.
var notLibfabric = map[string]bool{
	"GOSHMEMI_FI_API_VERSION":     true, // checked against FI_VERSION(1, 14) below
	"GOSHMEMI_FI_SYMVER_INFO":     true,
	"GOSHMEMI_FI_SYMVER_FABRIC":   true,
	"GOSHMEMI_FI_SYMVER_BASE":     true,
	"GOSHMEMI_FI_CXI_COUNTER_OPS": true, // fi_cxi_ext.h: checked only where it is installed
}

// partial are the ops tables abi.h declares up to the last member goshmem
// calls: their members are checked, not their size.
func partial(name string) bool { return strings.HasPrefix(name, "goshmemi_fi_ops") }

// parseABI reads the structs and constants abi.h declares.
func parseABI(t *testing.T) abiDecl {
	t.Helper()
	src, err := os.ReadFile("abi.h")
	require.NoError(t, err)
	d := abiDecl{structs: map[string][]string{}}
	var cur string
	depth := 0
	for _, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "/*")
		code = strings.TrimSpace(code)
		if m := reDefine.FindStringSubmatch(code); m != nil && !notLibfabric[m[1]] {
			d.consts = append(d.consts, m[1])
			continue
		}
		if m := reEnumConst.FindAllStringSubmatch(code, -1); m != nil && cur == "" {
			for _, c := range m {
				d.consts = append(d.consts, c[1])
			}
			continue
		}
		if m := reStructOpen.FindStringSubmatch(code); m != nil && cur == "" {
			cur, depth = m[1], 1
			d.order = append(d.order, cur)
			continue
		}
		if cur == "" {
			continue
		}
		switch {
		case strings.HasSuffix(code, "{"): // a nested union
			depth++
		case strings.HasPrefix(code, "}") && depth > 1: // "} op;"
			depth--
			if m := reMember.FindStringSubmatch(code); m != nil {
				d.structs[cur] = append(d.structs[cur], m[1])
			}
		case code == "};":
			cur = ""
		case depth == 1:
			if m := reFuncPtr.FindStringSubmatch(code); m != nil {
				d.structs[cur] = append(d.structs[cur], m[1])
			} else if m := reMember.FindStringSubmatch(code); m != nil {
				d.structs[cur] = append(d.structs[cur], m[1])
			}
		}
	}
	return d
}

// theirs maps one of abi.h's names to libfabric's.
func theirs(name string) string {
	name = strings.TrimPrefix(name, "goshmemi_")
	return strings.TrimPrefix(name, "GOSHMEMI_")
}

// abiProbe writes a C file that includes libfabric's headers and abi.h and
// asserts, at compile time, that every declared struct member has the same
// offset and size as libfabric's, every whole struct the same size, and
// every constant the same value.
func abiProbe(d abiDecl, cxiExt bool) string {
	var b strings.Builder
	b.WriteString(`#include <stddef.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>
#include <rdma/fi_errno.h>
`)
	if cxiExt {
		b.WriteString("#include <rdma/fi_cxi_ext.h>\n")
	}
	b.WriteString(`#include "abi.h"
#define SAME_MEMBER(m, t, f) \
	_Static_assert(offsetof(struct m, f) == offsetof(struct t, f) && \
		sizeof(((struct m *)0)->f) == sizeof(((struct t *)0)->f), #m "." #f " differs from " #t "." #f)
#define SAME_SIZE(m, t) _Static_assert(sizeof(struct m) == sizeof(struct t), "sizeof " #m " differs from " #t)
#define SAME_VALUE(m, t) _Static_assert((unsigned long long)(m) == (unsigned long long)(t), #m " differs from " #t)
_Static_assert(GOSHMEMI_FI_API_VERSION == FI_VERSION(1, 14), "GOSHMEMI_FI_API_VERSION is FI_VERSION(1, 14) (MinVersion)");
_Static_assert(sizeof(goshmemi_fi_addr_t) == sizeof(fi_addr_t), "fi_addr_t");
`)
	for _, s := range d.order {
		if s == "goshmemi_fi_cxi_cntr_ops" && !cxiExt {
			continue
		}
		for _, f := range d.structs[s] {
			fmt.Fprintf(&b, "SAME_MEMBER(%s, %s, %s);\n", s, theirs(s), f)
		}
		if !partial(s) {
			fmt.Fprintf(&b, "SAME_SIZE(%s, %s);\n", s, theirs(s))
		}
	}
	for _, c := range d.consts {
		fmt.Fprintf(&b, "SAME_VALUE(%s, %s);\n", c, theirs(c))
	}
	if cxiExt {
		b.WriteString("#include <string.h>\nint cxi_ops_name(void) { return strcmp(GOSHMEMI_FI_CXI_COUNTER_OPS, FI_CXI_COUNTER_OPS); }\n")
	}
	return b.String()
}

// libfabricInclude returns the directory holding rdma/fabric.h, or "".
func libfabricInclude() string {
	for _, dir := range []string{"/usr/include", "/usr/local/include"} {
		if _, err := os.Stat(filepath.Join(dir, "rdma", "fabric.h")); err == nil {
			return dir
		}
	}
	return ""
}

// TestABIParse: the reader of abi.h finds what abi.h declares (so the
// check below cannot pass by checking nothing).
func TestABIParse(t *testing.T) {
	d := parseABI(t)
	assert.Equal(t, []string{"next", "caps", "mode", "addr_format", "src_addrlen", "dest_addrlen", "src_addr", "dest_addr",
		"handle", "tx_attr", "rx_attr", "ep_attr", "domain_attr", "fabric_attr", "nic"}, d.structs["goshmemi_fi_info"])
	assert.Equal(t, []string{"context", "threshold", "triggering_cntr", "completion_cntr", "op_type", "op"},
		d.structs["goshmemi_fi_deferred_work"])
	assert.Equal(t, []string{"size", "read", "readerr", "add", "set"}, d.structs["goshmemi_fi_ops_cntr"])
	assert.Contains(t, d.structs["goshmemi_fi_context2"], "internal")
	assert.GreaterOrEqual(t, len(d.order), 30, "structs")
	assert.Contains(t, d.consts, "GOSHMEMI_FI_EAVAIL")
	assert.Contains(t, d.consts, "GOSHMEMI_FI_QUEUE_WORK")
	assert.Contains(t, d.consts, "GOSHMEMI_FI_ORDER_ATOMIC_WAW")
	assert.GreaterOrEqual(t, len(d.consts), 50, "constants")
	assert.NotContains(t, d.consts, "GOSHMEMI_FI_VERSION", "a function-like macro")
}

// TestABIAgrees: abi.h matches libfabric's own headers (Debian's
// libfabric-dev, which scripts/deps.sh installs; the build itself never
// reads them): every member's offset and size, every whole struct's size,
// every constant's value. It skips without the headers, but fails under
// GOSHMEM_REQUIRE_LIBFABRIC_DEV=1 or CI, where they must be present.
func TestABIAgrees(t *testing.T) {
	inc := libfabricInclude()
	if inc == "" {
		const why = "libfabric's headers (rdma/fabric.h) are not installed (Debian: libfabric-dev): abi.h is checked only against them"
		if os.Getenv(requireDevEnv) == "1" || os.Getenv("CI") != "" {
			t.Fatalf("%s, and %s=1 or CI is set, so the check must run", why, requireDevEnv)
		}
		t.Skip(why)
	}
	_, err := os.Stat(filepath.Join(inc, "rdma", "fi_cxi_ext.h"))
	cxiExt := err == nil
	d := parseABI(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.c")
	require.NoError(t, os.WriteFile(src, []byte(abiProbe(d, cxiExt)), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	out, err := exec.Command("gcc", "-std=gnu11", "-Wall", "-Werror", "-I", inc, "-I", wd, "-c", "-o",
		filepath.Join(dir, "probe.o"), src).CombinedOutput()
	require.NoError(t, err, "abi.h disagrees with %s/rdma:\n%s", inc, out)
	t.Logf("checked %d structs and %d constants against %s/rdma (fi_cxi_ext.h: %v)", len(d.order), len(d.consts), inc, cxiExt)
}

// TestMinVersion: MinVersion is abi.h's GOSHMEMI_FI_API_VERSION.
func TestMinVersion(t *testing.T) {
	assert.Equal(t, MinVersion, apiVersion())
}
