package shmem

// BreakWorld puts the world team out of step with cause err, as a failed
// collective would (a 1-PE job cannot fail one for real).
func BreakWorld(err error) {
	if r := current.Load(); r != nil {
		r.world.Lock()
		r.world.Fail(err)
		r.world.Unlock()
	}
}
