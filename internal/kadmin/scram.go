package kadmin

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// SCRAM iteration bounds, Kafka's (AlterUserScramCredentials refuses
// others).
const (
	SCRAMIterationsMin = 4096
	SCRAMIterationsMax = 16384
)

// scramMechanisms are the mechanisms AlterUserScramCredentials takes, by
// their names.
var scramMechanisms = map[string]kadm.ScramMechanism{"SCRAM-SHA-256": kadm.ScramSha256, "SCRAM-SHA-512": kadm.ScramSha512}

// ParseSCRAMMechanism is the mechanism named s (SCRAM-SHA-256 or
// SCRAM-SHA-512, exactly), and whether s names one.
func ParseSCRAMMechanism(s string) (kadm.ScramMechanism, bool) {
	m, ok := scramMechanisms[s]
	return m, ok
}

// UpsertSCRAM sets the user's password for each mechanism, creating the
// user where it has none (AlterUserScramCredentials upserts, as Kafka's
// does; the client salts and hashes the password).
func UpsertSCRAM(ctx context.Context, adm *kadm.Client, user, password string, iterations int32, mechs []kadm.ScramMechanism) error {
	var ups []kadm.UpsertSCRAM
	for _, m := range mechs {
		ups = append(ups, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: iterations, Password: password})
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, ups)
	return scramResult(res, err, user)
}

// DeleteSCRAM deletes the user's credential of each mechanism.
func DeleteSCRAM(ctx context.Context, adm *kadm.Client, user string, mechs []kadm.ScramMechanism) error {
	var dels []kadm.DeleteSCRAM
	for _, m := range mechs {
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: m})
	}
	res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
	return scramResult(res, err, user)
}

// scramResult is the outcome of AlterUserScramCredentials for one user.
func scramResult(res kadm.AlteredUserSCRAMs, err error, user string) error {
	if err != nil {
		return err
	}
	a, ok := res[user]
	if !ok {
		return fmt.Errorf("AlterUserScramCredentials answered nothing for user %s", user)
	}
	if a.Err == nil {
		return nil
	}
	return &Refused{Err: a.Err, Message: a.ErrMessage}
}
