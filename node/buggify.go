package node

// BUGGIFY fault sites (FoundationDB style): places in product code that,
// in simulation only, now and then take a path that is legal but rare in
// production, so the simulator's clients and checkers meet it. Env.Buggify
// is nil in production and every site is then dead code.
//
// Sites:
//   - Fetch returns one batch at most for the first partition (as if its
//     byte budget ran out), so clients must fetch again (api_fetch.go).
//   - An acks=all produce that committed is answered REQUEST_TIMED_OUT
//     (as if the answer were lost), so clients must retry and idempotence
//     must answer the retry with the original offset (api_produce.go).
//   - A transaction coordinator's __transaction_state write fails before
//     it is appended, as if leadership had just moved, so the coordinator's
//     failed-write paths run and clients retry (txns.go).

// buggify reports whether a fault site fires: only in simulation, with
// probability 1/oneIn, drawn from the simulation's seeded generator.
func (r *Reactor) buggify(oneIn int) bool {
	return r.env.Buggify != nil && r.env.Buggify.Intn(oneIn) == 0
}
