package cudatr

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The error record's layout and the code names match the headers.
func TestDeviceErrorMatchesHeader(t *testing.T) {
	var b strings.Builder
	b.WriteString(`#include <stdio.h>
#include <stddef.h>
#define GOSHMEM_REMOTE_TRANSPORTS 1
#include <goshmem.h>
#define P(f) printf("rec_" #f " %zu\n", offsetof(goshmemi_error_record_t, f))
#define C(n) printf(#n " %d\n", (int)n)
int main(void) {
  P(code); P(info); P(pe); P(block); P(thread); P(done); P(what);
  printf("rec_size %zu\n", sizeof(goshmemi_error_record_t));
`)
	for _, n := range deviceErrNames {
		fmt.Fprintf(&b, "  C(%s);\n", n)
	}
	b.WriteString("  return 0;\n}\n")
	got := testutil.CValues(t, b.String())
	want := map[string]int{"rec_code": errRecCode, "rec_info": errRecInfo, "rec_pe": errRecPE, "rec_block": errRecBlock,
		"rec_thread": errRecThread, "rec_done": errRecDone, "rec_what": errRecWhat, "rec_size": errRecSize}
	for k, v := range want {
		assert.EqualValues(t, v, got[k], "%s: Go mirror vs device_state.h", k)
	}
	for code, n := range deviceErrNames {
		v, ok := got[n]
		if assert.True(t, ok, "gcc printed no %s", n) {
			assert.EqualValues(t, code, v, "%s", n)
		}
	}
}

// A record written as goshmemi_fail writes it decodes; an unfinished one
// (done still 0) or an empty one is no error.
func TestDeviceErrorDecode(t *testing.T) {
	buf := make([]uint64, errRecSize/8)
	tr := &Transport{errRec: unsafe.Pointer(&buf[0])}
	assert.Nil(t, tr.DeviceError())
	b := unsafe.Slice((*byte)(tr.errRec), errRecSize)
	buf[0] = 18
	buf[1] = 2<<32 | 2
	*(*int32)(unsafe.Pointer(&b[errRecPE])) = 1
	*(*uint32)(unsafe.Pointer(&b[errRecBlock])) = 3
	*(*uint32)(unsafe.Pointer(&b[errRecThread])) = 64
	copy(b[errRecWhat:], "proxy wait exceeded GOSHMEM_TIMEOUT\x00junk")
	assert.Nil(t, tr.DeviceError(), "done is 0: the record is not complete")
	*(*uint32)(unsafe.Pointer(&b[errRecDone])) = 1
	e := tr.DeviceError()
	require.NotNil(t, e)
	assert.Equal(t, DeviceError{Code: 18, Info: 2<<32 | 2, PE: 1, Block: 3, Thread: 64, What: "proxy wait exceeded GOSHMEM_TIMEOUT"}, *e)
	assert.Equal(t, "device call failed on PE 1 (block 3, thread 64): proxy wait exceeded GOSHMEM_TIMEOUT [GOSHMEMI_ERR_PROXY_TIMEOUT (18), info 2, 2]", e.Error())
	assert.True(t, e.Timeout())
	assert.False(t, (&DeviceError{Code: 4}).Timeout())
	assert.Nil(t, (*Transport)(nil).DeviceError())
}
