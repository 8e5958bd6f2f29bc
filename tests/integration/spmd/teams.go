package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/goshmem/goshmem/shmem"
)

// predefinedSlots is how many team slots Init takes: the world's and the
// node team's (TeamShared and TeamNode are one team).
const predefinedSlots = 2

// teamSlots is GOSHMEM_MAX_TEAMS as this job runs (its default unset).
func teamSlots() int {
	if v := os.Getenv("GOSHMEM_MAX_TEAMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return 1088
}

// teamsMany is -mode teams-many: every PE splits TeamWorld until the team
// slots (GOSHMEM_MAX_TEAMS) run out, alternating the world in order and
// reversed, and checks that:
//   - it made GOSHMEM_MAX_TEAMS less the predefined teams (1,086 teams, at
//     least 1,024, at the default), all alive at once, each valid with every
//     PE a member numbered as the split says;
//   - the next split fails on every PE with ErrInvalidArgument saying that
//     every slot is in use and to raise GOSHMEM_MAX_TEAMS;
//   - a sync on every team completes (each slot's psync words work), and a
//     Reduce on the first, a middle and the last team sums each PE's values;
//   - destroying every other team frees their slots: as many splits succeed
//     again (a Reduce on the last checked), and then the slots are full
//     again;
//   - after every team is destroyed a split and a barrier work.
//
// Each PE prints "teams-many: PE <me>: ok: <teams> teams alive at once" or
// its failures; the exit status is 0 only when every expectation held.
func teamsMany() int {
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	t := &T{name: "teams-many", me: me, n: n}
	slots := teamSlots()
	want := slots - predefinedSlots
	var alive int
	t.run(func(t *T) {
		buf, err := shmem.Alloc[int64](2)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", buf.Free()) }()
		split := func(i int) (shmem.Team, error) {
			if i%2 == 0 {
				return shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, n)
			}
			return shmem.TeamSplitStrided(shmem.TeamWorld, n-1, -1, n)
		}
		index := func(i int) int { // this PE's number in team i
			if i%2 == 0 {
				return me
			}
			return n - 1 - me
		}
		var teams []shmem.Team
		var last error
		for i := 0; i <= want; i++ {
			tm, err := split(i)
			if err != nil {
				last = err
				break
			}
			teams = append(teams, tm)
		}
		alive = len(teams)
		if !Eq(t, "teams alive at once", len(teams), want) {
			return
		}
		if slots == 1088 {
			t.True(fmt.Sprintf("at least 1,024 teams with the default settings (got %d)", len(teams)), len(teams) >= 1024)
		}
		t.Is("the split past the last slot", last, shmem.ErrInvalidArgument,
			fmt.Sprintf("PE %d: TeamSplitStrided: all %d team slots (GOSHMEM_MAX_TEAMS) are in use", me, slots))
		hint(t, "the split past the last slot", last, "raise GOSHMEM_MAX_TEAMS")
		for i, tm := range teams {
			if !tm.Valid() || tm.NPEs() != n || tm.MyPE() != index(i) {
				t.Fatalf("team %d: valid %v, %d PEs (want %d), this PE %d (want %d)", i, tm.Valid(), tm.NPEs(), n, tm.MyPE(), index(i))
			}
		}
		for i, tm := range teams {
			t.Must(fmt.Sprintf("Sync on team %d", i), tm.Sync())
		}
		reduce := func(i int, tm shmem.Team) {
			buf.Local()[0] = int64(me*1000 + i)
			t.Must(fmt.Sprintf("Reduce on team %d", i), shmem.Reduce(tm, shmem.OpSum, buf, buf, 1))
			Eq(t, fmt.Sprintf("Reduce on team %d", i), buf.Local()[0], int64(1000*n*(n-1)/2+n*i))
		}
		for _, i := range []int{0, len(teams) / 2, len(teams) - 1} {
			reduce(i, teams[i])
		}
		freed := 0
		for i := 1; i < len(teams); i += 2 {
			t.Must(fmt.Sprintf("Destroy team %d", i), teams[i].Destroy())
			t.True(fmt.Sprintf("team %d invalid after Destroy", i), !teams[i].Valid())
			freed++
		}
		for i := 1; i < len(teams); i += 2 {
			tm, err := split(i)
			t.Must(fmt.Sprintf("split %d after Destroy", i), err)
			teams[i] = tm
		}
		reduce(len(teams)-1, teams[len(teams)-1])
		_, err = split(0)
		t.Is(fmt.Sprintf("a split after %d destroyed and %d made again", freed, freed), err, shmem.ErrInvalidArgument,
			fmt.Sprintf("all %d team slots (GOSHMEM_MAX_TEAMS) are in use", slots))
		for i, tm := range teams {
			t.Must(fmt.Sprintf("Destroy team %d", i), tm.Destroy())
		}
		tm, err := split(0)
		t.Must("a split after every team was destroyed", err)
		t.OK("Barrier", tm.Barrier())
		t.OK("Destroy", tm.Destroy())
	})
	ferr := shmem.Finalize()
	t.OK("Finalize", ferr)
	if t.fails > 0 {
		return 1
	}
	fmt.Printf("teams-many: PE %d: ok: %d teams alive at once\n", me, alive)
	return 0
}
