package verbs

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

// requireEnv makes a missing rdma-core a failure instead of a skip
// (the Makefile's test target sets it: CI installs libibverbs-dev).
const requireEnv = "GOSHMEM_REQUIRE_RDMA_CORE_DEV"

// requireRDMACore skips the test with the reason, or fails it when
// GOSHMEM_REQUIRE_RDMA_CORE_DEV=1.
func requireRDMACore(t *testing.T, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s, and %s=1 says it must be there", why, requireEnv)
	}
	t.Skipf("%s (Debian: libibverbs-dev; set %s=1 to fail instead)", why, requireEnv)
}

// The real headers abi.h is checked against.
var rdmaHeaders = []string{"/usr/include/infiniband/verbs.h", "/usr/include/infiniband/mlx5dv.h"}

// abiDecl is a struct or union of abi.h and its fields, each by its path
// from the struct ("sq.buf" for a field of a nested struct).
type abiDecl struct {
	kind, name string // "struct"/"union", the name without gv_
	fields     []string
}

var (
	reComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	reTop     = regexp.MustCompile(`(?m)^(struct|union) gv_(\w+) \{`)
	reDefine  = regexp.MustCompile(`(?m)^#define GV_(\w+)[ \t]`)
	reFunc    = regexp.MustCompile(`\bX\((\w+), "`)
	reIdent   = regexp.MustCompile(`\(\*\s*(\w+)\)\s*\(|(\w+)\s*(?:\[[^\]]*\])?\s*$`)
)

// parseABI lists abi.h's structs and unions with their fields (padding,
// named gv_pad_*, left out), its GV_ constants and its functions.
func parseABI(t *testing.T, src string) (decls []abiDecl, consts, funcs []string) {
	t.Helper()
	code := reComment.ReplaceAllString(src, "")
	for _, m := range reTop.FindAllStringSubmatchIndex(code, -1) {
		d := abiDecl{kind: code[m[2]:m[3]], name: code[m[4]:m[5]]}
		body := code[m[1]:]
		// Walk the body: a nested "struct {" / "union {" opens a scope
		// whose fields get the name of its closing "} name;" as prefix.
		type scope struct{ fields []string }
		stack := []scope{{}}
		var stmt strings.Builder
		depth := 0 // parentheses
	walk:
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c == '{' && depth == 0:
				stack = append(stack, scope{})
				stmt.Reset()
				continue
			case c == '}' && depth == 0:
				if len(stack) == 1 {
					break walk
				}
				inner := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				j := strings.IndexByte(body[i:], ';')
				require.GreaterOrEqual(t, j, 0)
				name := strings.TrimSpace(body[i+1 : i+j])
				top := &stack[len(stack)-1]
				top.fields = append(top.fields, name)
				for _, f := range inner.fields {
					top.fields = append(top.fields, name+"."+f)
				}
				i += j
				stmt.Reset()
				continue
			case c == ';' && depth == 0:
				s := strings.TrimSpace(stmt.String())
				stmt.Reset()
				id := reIdent.FindStringSubmatch(s)
				require.NotNil(t, id, "abi.h: cannot read the field of %q in %s", s, d.name)
				name := id[1] + id[2]
				if !strings.HasPrefix(name, "gv_pad_") {
					top := &stack[len(stack)-1]
					top.fields = append(top.fields, name)
				}
				continue
			}
			stmt.WriteByte(c)
		}
		d.fields = stack[0].fields
		decls = append(decls, d)
	}
	for _, m := range reDefine.FindAllStringSubmatch(code, -1) {
		consts = append(consts, m[1])
	}
	for _, m := range reFunc.FindAllStringSubmatch(code, -1) {
		funcs = append(funcs, m[1])
	}
	return decls, consts, funcs
}

// TestABIAgreesWithRDMACore compiles a program with rdma-core's own
// verbs.h and mlx5dv.h beside abi.h and compares, for every struct and
// union abi.h declares, its size and every field's offset and size; every
// GV_ constant with the real one; and that every function abi.h resolves
// is a function the real headers declare. The build never reads these
// headers: this test is what keeps abi.h honest.
func TestABIAgreesWithRDMACore(t *testing.T) {
	for _, h := range rdmaHeaders {
		if _, err := os.Stat(h); err != nil {
			requireRDMACore(t, "rdma-core's %s is not installed: abi.h is checked only against it", h)
		}
	}
	src, err := os.ReadFile("abi.h")
	require.NoError(t, err)
	decls, consts, funcs := parseABI(t, string(src))
	require.GreaterOrEqual(t, len(decls), 20, "abi.h's structs were not all read")
	require.GreaterOrEqual(t, len(consts), 30, "abi.h's constants were not all read")
	require.GreaterOrEqual(t, len(funcs), 31, "abi.h's functions were not all read")

	var p strings.Builder
	p.WriteString(`#include <stdio.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include "abi.h"
#define SZ(T, F) sizeof(((T *)0)->F)
int main(void)
{
`)
	var want []string // the line keys the program prints
	for _, d := range decls {
		real, mine := d.kind+" "+d.name, d.kind+" gv_"+d.name
		fmt.Fprintf(&p, "\tprintf(\"size %s %%zu %%zu\\n\", sizeof(%s), sizeof(%s));\n", d.name, real, mine)
		want = append(want, "size "+d.name)
		for _, f := range d.fields {
			fmt.Fprintf(&p, "\tprintf(\"field %s.%s %%zu/%%zu %%zu/%%zu\\n\", offsetof(%s, %s), SZ(%s, %s), offsetof(%s, %s), SZ(%s, %s));\n",
				d.name, f, real, f, real, f, mine, f, mine, f)
			want = append(want, "field "+d.name+"."+f)
		}
	}
	for _, c := range consts {
		fmt.Fprintf(&p, "\tprintf(\"const %s %%#llx %%#llx\\n\", (unsigned long long)(uintptr_t)(%s), (unsigned long long)(uintptr_t)(GV_%s));\n", c, c, c)
		want = append(want, "const "+c)
	}
	for _, f := range funcs {
		// &name: the function itself, also where a function-like macro
		// of the same name wraps it (ibv_query_port, ibv_reg_mr).
		fmt.Fprintf(&p, "\tprintf(\"func %s %%d %%d\\n\", (&%s) != NULL, 1);\n", f, f)
		want = append(want, "func "+f)
	}
	p.WriteString("\treturn 0;\n}\n")

	dir := t.TempDir()
	cfile := filepath.Join(dir, "abi_probe.c")
	require.NoError(t, os.WriteFile(cfile, []byte(p.String()), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	bin := filepath.Join(dir, "abi_probe")
	out, err := exec.Command("gcc", "-std=gnu11", "-Wall", "-Werror", "-Wno-address", "-I", wd, "-o", bin, cfile).CombinedOutput()
	require.NoError(t, err, "compiling abi.h beside rdma-core's headers:\n%s", out)
	out, err = exec.Command(bin).CombinedOutput()
	require.NoError(t, err, "%s", out)

	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 4, "probe line %q", l)
		key := f[0] + " " + f[1]
		got[key] = f[2] + " " + f[3]
		assert.Equal(t, f[2], f[3], "%s: rdma-core's (left) and abi.h's (right) differ", key)
	}
	for _, k := range want {
		assert.Contains(t, got, k)
	}
	t.Logf("checked %d structs and unions, %d fields, %d constants, %d functions against %v",
		len(decls), len(want)-len(decls)-len(consts)-len(funcs), len(consts), len(funcs), rdmaHeaders)
}

// TestParseABI: the parser sees nested fields and leaves padding out.
func TestParseABI(t *testing.T) {
	decls, consts, funcs := parseABI(t, `
/* a comment { with a brace } */
#define GV_A 1
#define GV_LIST(X) X(foo, "V_1", int, (int a)) X(bar, "V_2", void, (void))
struct gv_s {
	int a; /* enum e */
	void *gv_pad_0x8[3];
	int (*fn)(struct gv_t *t,
		  int b);
	struct {
		void *buf;
		uint32_t n[4];
	} sq;
};
union gv_u {
	uint8_t raw[16];
};
`)
	require.Len(t, decls, 2)
	assert.Equal(t, abiDecl{kind: "struct", name: "s", fields: []string{"a", "fn", "sq", "sq.buf", "sq.n"}}, decls[0])
	assert.Equal(t, abiDecl{kind: "union", name: "u", fields: []string{"raw"}}, decls[1])
	assert.Equal(t, []string{"A"}, consts)
	assert.Equal(t, []string{"foo", "bar"}, funcs)
}
