package node

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
)

// userStore is the reactor's side of the user credential store, which
// lives in the controller's metadata (controller/users.go): reading a
// credential for the protocol server's authentication, and proposing the
// bootstrap users once.
type userStore struct {
	bootstrapping bool // a BootstrapUsers command is in flight
	refused       bool // the controller refused it: do not ask again
}

// ScramCredential returns a user's credential for a SCRAM mechanism
// (controller.MechanismScramSHA256 or 512) from the applied metadata. The
// returned slices are shared with the metadata: read them, do not keep
// them past the event (copy them, as the runtime does).
func (r *Reactor) ScramCredential(user string, mechanism int8) (controller.ScramCredential, bool) {
	return r.ctl.state.ScramCredential(user, mechanism)
}

// ensureBootstrapped proposes Config.BootstrapUsers until the metadata says
// the cluster's users were bootstrapped (by this broker or another: the
// first command applied wins, the others change nothing).
func (u *userStore) ensureBootstrapped(r *Reactor) {
	if len(r.cfg.BootstrapUsers) == 0 || u.bootstrapping || u.refused || r.ctl.state.UsersBootstrapped || r.controllerLeader() == 0 {
		return
	}
	u.bootstrapping = true
	cmd := &controller.Command{BootstrapUsers: &controller.BootstrapUsers{Users: r.cfg.BootstrapUsers}}
	r.propose(cmd, func(res controller.Result) {
		u.bootstrapping = false
		if res.Err != nil && res.Err != kerr.RequestTimedOut {
			// Invalid credentials: asking again would fail again.
			u.refused = true
			r.env.Logf("node %d: bootstrap users refused: %v", r.self, res.Err)
		}
	})
}
