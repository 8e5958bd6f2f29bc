package main

// Device collectives (tests/gpu/kernels/devcoll.cu, -coll fatbins): every
// op family of include/goshmem's collectives on every team of the job's
// team list (world, TeamShared, a split team), thread/warp/block scope,
// n = 0, 1, odd, not a multiple of the warp, large, in place. The kernels
// check every element exactly on the device; the host checks the count of
// cases that ran, the calls' int returns and, for two cases, the data.

import (
	"flag"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/shmem"
)

var (
	collFatbin  = flag.String("coll", "", "device collective kernels (tests/gpu/kernels/devcoll.cu), and run the collective and stream tests: fatbins or glob patterns, comma-separated; a NAME.fatbin that does not exist stands for its parts NAME_<k>.fatbin (make gpucoll: bin/gpu/devcoll.fatbin is bin/gpu/devcoll_0.fatbin, devcoll_1.fatbin, ...); each kernel is looked up in all of them. The tests need every PE's kernels running at once (MPS on one GPU); empty: skip them")
	collLarge   = flag.Int("coll-large", 40001, "the large n of the collective cases (elements; keep it small over the proxy)")
	collTeams   = flag.String("coll-teams", "world,shared,halves", "teams of the collective tests: world, shared (TeamShared), halves (even/odd PEs, split), dup (split of every PE), many (every PE in reverse order, the team in device slot 1023: 1,024 teams alive at once, needs GOSHMEM_MAX_TEAMS >= 1024)")
	collThreads = flag.Int("coll-threads", 256, "threads of the collective kernels' one block")
)

const (
	collBytes = 16 << 20 // cbuf: two halves, source and destination
	nSizes    = 6        // devcoll.cu NSIZES
)

var (
	cmodColl  *moduleSet
	cbuf      shmem.Array[uint8]
	collErr   error
	collReady bool
	teamsList []collTeam // this PE's view of -coll-teams (teamSetup)
)

// collTeam is one team of the list as this PE sees it: the team it is a
// member of (halves: the even or the odd one).
type collTeam struct {
	name string
	t    shmem.Team
	id   int
}

// collSetup loads the modules of -coll and allocates cbuf, once, after
// teamSetup (collective: every PE runs the tests in the same order).
func collSetup() error {
	if err := teamSetup(); err != nil {
		return err
	}
	if collReady {
		return collErr
	}
	collReady = true
	if cmodColl, collErr = loadModules(collFiles); collErr != nil {
		return collErr
	}
	cbuf, collErr = shmem.AllocDevice[uint8](collBytes)
	return collErr
}

// collFiles are the fatbins -coll names (collResolve).
var collFiles []string

// collResolve resolves -coll, once, before the first test (collTests,
// streamTests); a value that names no fatbin ends the run.
func collResolve() {
	if collFiles != nil {
		return
	}
	files, err := resolveColl(*collFatbin)
	if err != nil {
		die("%v", err)
	}
	collFiles = files
}

// resolveColl turns -coll's value into fatbin paths: a comma-separated list
// of files and glob patterns; a NAME.fatbin that does not exist stands for
// its parts NAME_<k>.fatbin (k = 0, 1, ...: devcoll.cu built with
// -DDEVCOLL_PART=k), in part order.
func resolveColl(spec string) ([]string, error) {
	var files []string
	for _, p := range strings.Split(spec, ",") {
		if p == "" {
			return nil, fmt.Errorf("-coll %q: empty name in the list (want FILE.fatbin[,FILE2.fatbin...] or a glob pattern)", spec)
		}
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, fmt.Errorf("-coll %q: pattern %s: %w", spec, p, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("-coll %q: no file matches %s", spec, p)
			}
			files = append(files, m...)
			continue
		}
		parts, err := partsOf(p)
		if err != nil {
			return nil, fmt.Errorf("-coll %q: %w", spec, err)
		}
		_, statErr := os.Stat(p)
		switch {
		case statErr == nil && len(parts) > 0:
			return nil, fmt.Errorf("-coll %q: both %s and its parts %s exist: remove the one that is stale (make gpucoll builds the parts)",
				spec, p, strings.Join(parts, ", "))
		case statErr == nil:
			files = append(files, p)
		case len(parts) > 0:
			files = append(files, parts...)
		default:
			return nil, fmt.Errorf("-coll %q: neither %s nor its parts %s_<k>.fatbin exist (make gpucoll builds the parts)",
				spec, p, strings.TrimSuffix(p, ".fatbin"))
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			return nil, fmt.Errorf("-coll %q: %s is named twice", spec, f)
		}
		seen[f] = true
	}
	return files, nil
}

// partsOf lists NAME_<k>.fatbin for p = NAME.fatbin (k all digits), in the
// order of k; none for another name.
func partsOf(p string) ([]string, error) {
	stem, ok := strings.CutSuffix(p, ".fatbin")
	if !ok {
		return nil, nil
	}
	m, err := filepath.Glob(globQuote(stem) + "_[0-9]*.fatbin")
	if err != nil {
		return nil, fmt.Errorf("parts of %s: %w", p, err)
	}
	idx := map[string]int{}
	var parts []string
	for _, f := range m {
		k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), filepath.Base(stem)+"_"), ".fatbin"))
		if err != nil || k < 0 {
			continue // NAME_1x.fatbin: not a part
		}
		idx[f] = k
		parts = append(parts, f)
	}
	sort.Slice(parts, func(i, j int) bool { return idx[parts[i]] < idx[parts[j]] })
	return parts, nil
}

// globQuote escapes the pattern characters of a literal path.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// moduleSet is the modules of -coll: devcoll.cu's kernels, each in exactly
// one of them.
type moduleSet struct {
	files []string
	mods  []*shmem.Module
	where map[string]int // kernel name -> index in mods, once found
}

func loadModules(files []string) (*moduleSet, error) {
	s := &moduleSet{files: files, where: map[string]int{}}
	for _, f := range files {
		m, err := shmem.LoadModuleFile(f)
		if err != nil {
			return nil, err
		}
		s.mods = append(s.mods, m)
	}
	return s, nil
}

// Kernel returns the kernel called name from the one module that has it.
func (s *moduleSet) Kernel(name string) (*shmem.Kernel, error) {
	m, err := s.module(name)
	if err != nil {
		return nil, err
	}
	return m.Kernel(name)
}

// module is the one module that has the kernel called name; an error names
// the files searched when none or several have it.
func (s *moduleSet) module(name string) (*shmem.Module, error) {
	if i, ok := s.where[name]; ok {
		return s.mods[i], nil
	}
	var in []int
	for i, m := range s.mods {
		if _, err := m.Kernel(name); err == nil {
			in = append(in, i)
		}
	}
	switch len(in) {
	case 0:
		return nil, fmt.Errorf("kernel %s is in none of -coll's %d fatbins (%s): built from another devcoll.cu, or a part missing?",
			name, len(s.files), strings.Join(s.files, ", "))
	case 1:
		s.where[name] = in[0]
		return s.mods[in[0]], nil
	default:
		var fs []string
		for _, i := range in {
			fs = append(fs, s.files[i])
		}
		return nil, fmt.Errorf("kernel %s is in %d of -coll's fatbins (%s): give each part once, and not the whole-file build beside its parts",
			name, len(in), strings.Join(fs, ", "))
	}
}

var (
	teamsReady bool
	teamsErr   error
)

// teamSetup makes the teams of -coll-teams, once.
func teamSetup() error {
	if teamsReady {
		return teamsErr
	}
	teamsReady = true
	teamsList, teamsErr = makeTeams()
	return teamsErr
}

func makeTeams() ([]collTeam, error) {
	var list []collTeam
	for _, name := range strings.Split(*collTeams, ",") {
		var ct collTeam
		ct.name = name
		switch name {
		case "world":
			ct.t = shmem.TeamWorld
		case "shared":
			ct.t = shmem.TeamShared
		case "dup":
			t, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, npes)
			if err != nil {
				return nil, fmt.Errorf("TeamSplitStrided(world, 0, 1, %d): %w", npes, err)
			}
			ct.t = t
		case "halves":
			even, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, (npes+1)/2)
			if err != nil {
				return nil, fmt.Errorf("TeamSplitStrided(world, 0, 2, %d): %w", (npes+1)/2, err)
			}
			ct.t = even
			if npes > 1 {
				odd, err := shmem.TeamSplitStrided(shmem.TeamWorld, 1, 2, npes/2)
				if err != nil {
					return nil, fmt.Errorf("TeamSplitStrided(world, 1, 2, %d): %w", npes/2, err)
				}
				if me%2 == 1 {
					ct.t = odd
				}
			}
		case "many":
			t, err := manyTeams()
			if err != nil {
				return nil, err
			}
			ct.t = t
		default:
			return nil, fmt.Errorf("-coll-teams: unknown team %q (world, shared, halves, dup, many)", name)
		}
		ct.id = ct.t.DeviceID()
		if ct.id < 0 {
			return nil, fmt.Errorf("team %s: DeviceID = -1 on PE %d (no device slot: kernels cannot name it)", name, me)
		}
		list = append(list, ct)
	}
	return list, nil
}

// manySlot is the device slot of -coll-teams many's team: the 1,024th,
// the last row of a table of 1,024 live teams (issue 39: at least 1,024
// live teams, on the host and in the device's team table).
const manySlot = 1023

// manyTeams splits the world in reverse order (this PE is npes-1-me in
// each) until a team lands in device slot manySlot, and returns that one.
// The others stay alive: with world, shared and the rest of -coll-teams,
// 1,024 teams are alive while the tests run on the last. A split's slot
// is the same on every member (kernels name the team by it), so every PE
// stops after the same split.
func manyTeams() (shmem.Team, error) {
	for i := 1; ; i++ {
		t, err := shmem.TeamSplitStrided(shmem.TeamWorld, npes-1, -1, npes)
		if err != nil {
			return shmem.Team{}, fmt.Errorf("many: split %d of the world in reverse order: %w", i, err)
		}
		switch id := t.DeviceID(); {
		case id == manySlot:
			if got, want := t.MyPE(), npes-1-me; got != want {
				return shmem.Team{}, fmt.Errorf("many: team in slot %d: MyPE = %d on PE %d, want %d", id, got, me, want)
			}
			return t, nil
		case id < 0 || id > manySlot || i > manySlot:
			return shmem.Team{}, fmt.Errorf("many: split %d got device slot %d on PE %d, want at most %d", i, id, me, manySlot)
		}
	}
}

var opNames = []string{"sum", "prod", "min", "max", "and", "or", "xor"}
var scopeNames = []string{"thread", "warp", "block"}
var famNames = []string{"broadcast", "fcollect", "alltoall"}

// collKernel zeroes res, launches name on every PE (collectively) and
// returns the result words.
func collKernel(name string, args ...any) ([]int32, error) {
	if err := shmem.Put(res, 0, make([]int32, 64), me); err != nil {
		return nil, err
	}
	if err := shmem.BarrierAll(); err != nil {
		return nil, err
	}
	m, err := cmodColl.module(name)
	if err != nil {
		return nil, err
	}
	return kernel(m, name, true, 1, uint32(*collThreads), args...)
}

// collVerdict turns the result words into an error naming the first
// failing case.
func collVerdict(what string, r []int32, wantCases int, describe func(a, b, n, i, c int32) string) error {
	var errs []string
	if r[0] != 0 {
		errs = append(errs, fmt.Sprintf("%d device checks failed (first at devcoll.cu line %d: %s: got %d, want %d)",
			r[0], r[1], describe(r[2], r[3], r[4], r[5], r[6]), r[7], r[8]))
	}
	if r[11] != 0 {
		errs = append(errs, fmt.Sprintf("%d calls returned non-zero", r[11]))
	}
	if wantCases >= 0 && int(r[10]) != wantCases {
		errs = append(errs, fmt.Sprintf("%d cases ran, want %d", r[10], wantCases))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", what, strings.Join(errs, "; "))
	}
	return nil
}

type redType struct {
	name    string
	size    int
	mr, mrs int32 // ops compiled for reduce / reducescatter (bit = index in opNames), as devcoll.cu's RED_*_TYPES
	warpToo bool  // warp scope compiled
}

// the c_reduce_<name> and c_reducescatter_<name> kernels of devcoll.cu
var redTypes = []redType{
	{"int8", 1, 0x71, 0x01, false}, {"int32", 4, 0x7f, 0x7f, true}, {"uint64", 8, 0x79, 0x40, false},
	{"float", 4, 0x0f, 0x09, true}, {"double", 8, 0x09, 0x01, false}, {"half", 2, 0x0f, 0x01, true}, {"bfloat16", 2, 0x05, 0x01, false},
}

// the c_move_<name> kernels
var moveTypes = []struct {
	name string
	size int
}{{"int8", 1}, {"half", 2}, {"float", 4}, {"int64", 8}, {"mem", 1}}

// fits: whether devcoll.cu runs the case (its source and destination fit in half of cbuf)
func fits(elems int64, size int) bool { return (elems+8)*int64(size) <= collBytes/2 }

func sizesOf() []int64 { return []int64{0, 1, 7, 33, 1000, int64(*collLarge)} }

func reduceTest(rt redType, rs bool) test {
	fam := "reduce"
	if rs {
		fam = "reducescatter"
	}
	return test{fmt.Sprintf("dev %s %s", fam, rt.name), func() error {
		if err := collSetup(); err != nil {
			return err
		}
		opmask, scopes := rt.mr, 2
		if rs {
			opmask = rt.mrs
		}
		if rt.warpToo {
			scopes = 3
		}
		for _, ct := range teamsList {
			tn := ct.t.NPEs()
			want := 0
			for _, n := range sizesOf() {
				nsrc := n
				if rs {
					nsrc = n * int64(tn)
				}
				if fits(nsrc, rt.size) {
					if rs {
						want++
					} else {
						want += 2
					}
				}
			}
			want *= bits.OnesCount32(uint32(opmask)) * scopes
			r, err := collKernel("c_"+fam+"_"+rt.name, cbuf, uint64(collBytes/2), res, int32(ct.id), opmask, int32(7), int32(*collLarge))
			if err != nil {
				return fmt.Errorf("team %s: %w", ct.name, err)
			}
			if err := collVerdict("team "+ct.name, r, want, func(op, sc, n, i, c int32) string {
				return fmt.Sprintf("%s_%s scope %s n=%d element %d in-place=%d", rt.name, opNames[op%7], scopeNames[sc%3], n, i, c)
			}); err != nil {
				return err
			}
		}
		return nil
	}}
}

func moveTest(name string, size int, fam int) test {
	return test{fmt.Sprintf("dev %s %s", famNames[fam], name), func() error {
		if err := collSetup(); err != nil {
			return err
		}
		for _, ct := range teamsList {
			tn := int64(ct.t.NPEs())
			want := 0
			for _, n := range sizesOf() {
				ns, nd := n, n*tn
				switch fam {
				case 0:
					nd = n
				case 2:
					ns = n * tn
				}
				if fits(max(ns, nd), size) {
					if fam == 0 {
						want += 4
					} else {
						want++
					}
				}
			}
			want *= 3
			r, err := collKernel("c_move_"+name, cbuf, uint64(collBytes/2), res, int32(ct.id), int32(fam), int32(7), int32(*collLarge))
			if err != nil {
				return fmt.Errorf("team %s: %w", ct.name, err)
			}
			if err := collVerdict("team "+ct.name, r, want, func(f, sc, n, i, v int32) string {
				return fmt.Sprintf("%s %s scope %s n=%d element %d variant %d (1: root last, 2: in place, 10+: guard)",
					name, famNames[f%3], scopeNames[sc%3], n, i, v)
			}); err != nil {
				return err
			}
		}
		return nil
	}}
}

// hostCheckTest runs one block-scope case of fcollect (int64) and of the
// int32 sum reduce (in place) on the world team and checks the last case's
// data on the host, element by element: a cross-check of the device's
// checker (a checker that checked nothing would pass everything).
func hostCheckTest() test {
	return test{"dev collectives: host cross-check", func() error {
		if err := collSetup(); err != nil {
			return err
		}
		n := int64(*collLarge)
		r, err := collKernel("c_move_int64", cbuf, uint64(collBytes/2), res, int32(shmem.TeamWorld.DeviceID()), int32(1), int32(4), int32(n))
		if err != nil {
			return err
		}
		if err := collVerdict("fcollect int64", r, -1, func(f, sc, n, i, v int32) string {
			return fmt.Sprintf("scope %s n=%d element %d", scopeNames[sc%3], n, i)
		}); err != nil {
			return err
		}
		if fits(n*int64(npes), 8) {
			got := make([]int64, n*int64(npes))
			b := make([]byte, 8*len(got))
			if err := shmem.Get(b, cbuf, collBytes/2, me); err != nil {
				return err
			}
			for i := range got {
				got[i] = int64(le.Uint64(b[8*i:]))
				p, k := int64(i)/n, int64(i)%n
				if want := (p*31 + k*7 + 3) % 251; got[i] != want {
					return fmt.Errorf("host check: fcollect dst[%d] = %d, want %d (PE %d element %d)", i, got[i], want, p, k)
				}
			}
		}
		// int32 sum, block scope: the last case is n = large, in place (the result is in the source half)
		r, err = collKernel("c_reduce_int32", cbuf, uint64(collBytes/2), res, int32(shmem.TeamWorld.DeviceID()), int32(1), int32(4), int32(n))
		if err != nil {
			return err
		}
		if err := collVerdict("sum int32", r, 12, func(op, sc, nn, i, c int32) string {
			return fmt.Sprintf("scope %s n=%d element %d in-place=%d", scopeNames[sc%3], nn, i, c)
		}); err != nil {
			return err
		}
		b := make([]byte, 4*n)
		if err := shmem.Get(b, cbuf, 0, me); err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			want := int64(0)
			for p := int64(0); p < int64(npes); p++ {
				want += (p+1)*3 + i%7
			}
			if got := int64(int32(le.Uint32(b[4*i:]))); got != want {
				return fmt.Errorf("host check: sum_reduce dst[%d] = %d, want %d", i, got, want)
			}
		}
		return nil
	}}
}

func everyTypeTest() test {
	return test{"dev sum_reduce every type", func() error {
		if err := collSetup(); err != nil {
			return err
		}
		for _, ct := range teamsList {
			types := int32(0)
			for _, name := range []string{"c_every_type_0", "c_every_type_1"} {
				r, err := collKernel(name, cbuf, res, int32(ct.id))
				if err != nil {
					return fmt.Errorf("team %s: %w", ct.name, err)
				}
				if err := collVerdict("team "+ct.name+": "+name, r, -1, func(t, what, n, i, c int32) string {
					return fmt.Sprintf("type #%d (devcoll.cu RED_*_TYPES order) sum_reduce element %d", t, i)
				}); err != nil {
					return err
				}
				types += r[12]
			}
			if types != 24 {
				return fmt.Errorf("team %s: %d types ran, want 24", ct.name, types)
			}
		}
		return nil
	}}
}

func syncTest() test {
	return test{"dev barrier/team_sync/sync/sync_all int returns", func() error {
		if err := collSetup(); err != nil {
			return err
		}
		rounds := int32(min(*rounds, 400))
		for _, ct := range teamsList {
			r, err := collKernel("c_sync", cbuf, res, int32(ct.id), rounds)
			if err != nil {
				return fmt.Errorf("team %s: %w", ct.name, err)
			}
			forms := []string{"barrier", "barrier_warp", "barrier_block", "team_sync|sync", "team_sync_warp|sync_warp", "team_sync_block|sync_block", "sync_all", "sync_all_block"}
			if err := collVerdict("team "+ct.name, r, int(rounds), func(form, _, round, j, _ int32) string {
				return fmt.Sprintf("after %s in round %d, member %d's slot", forms[form%8], round, j)
			}); err != nil {
				return err
			}
		}
		return nil
	}}
}

// collTests is the collective part of the suite (none without -coll).
func collTests() []test {
	if *collFatbin == "" {
		return nil
	}
	collResolve()
	var ts []test
	ts = append(ts, hostCheckTest(), syncTest(), everyTypeTest())
	for _, rt := range redTypes {
		ts = append(ts, reduceTest(rt, false))
	}
	for _, rt := range redTypes {
		ts = append(ts, reduceTest(rt, true))
	}
	for fam := 0; fam < 3; fam++ {
		for _, mt := range moveTypes {
			ts = append(ts, moveTest(mt.name, mt.size, fam))
		}
	}
	return ts
}
