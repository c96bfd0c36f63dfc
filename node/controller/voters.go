package controller

import "github.com/twmb/franz-go/pkg/kerr"

// VoterRefusal is a controller voter change (AddRaftVoter,
// RemoveRaftVoter: node/voters.go) the controller leader refused, and the
// error the asking client is told. The leader writes the refusal into
// the log and the asking broker answers its client when it applies it, so
// a refusal a client was told is committed: every later leader has
// applied it before it may propose a membership change (a leader proposes
// none before its term's first entry is applied), and refuses a copy of
// the request (a duplicate, or a resend still in flight) the same way,
// across restarts and leader changes. Before, the refusing leader alone
// remembered it, in memory.
type VoterRefusal struct {
	ReqID string `json:"req_id"`
	Code  int16  `json:"code"`
	Msg   string `json:"msg,omitempty"`
}

// VoterRefusalsKept is how many refused voter changes the metadata keeps
// (the latest): a copy of a request is in flight for at most its asker's
// deadline, in which time far fewer voter changes are asked.
const VoterRefusalsKept = 16

// refuseVoterChange records v, unless its request is refused already (the
// first refusal stands).
func (s *State) refuseVoterChange(v *VoterRefusal) Result {
	if v.ReqID == "" || v.Code == 0 {
		return Result{Err: withMessage(kerr.InvalidRequest, "a voter refusal needs a request id and an error code")}
	}
	if _, ok := s.VoterRefusal(v.ReqID); ok {
		return Result{}
	}
	s.VoterRefusals = append(s.VoterRefusals, *v)
	if n := len(s.VoterRefusals); n > VoterRefusalsKept {
		s.VoterRefusals = append([]VoterRefusal(nil), s.VoterRefusals[n-VoterRefusalsKept:]...)
	}
	return Result{}
}

// VoterRefusal returns the recorded refusal of voter change reqID.
func (s *State) VoterRefusal(reqID string) (VoterRefusal, bool) {
	for _, v := range s.VoterRefusals {
		if v.ReqID == reqID {
			return v, true
		}
	}
	return VoterRefusal{}, false
}
