package kadmin

// Refused is an error code the broker answered, with the message it sent
// (empty if none). It unwraps to the code's kerr error, so errors.Is and
// errors.As see the code.
type Refused struct {
	Err     error
	Message string
}

func (r *Refused) Error() string {
	if r.Message == "" {
		return r.Err.Error()
	}
	return r.Err.Error() + ": " + r.Message
}

func (r *Refused) Unwrap() error { return r.Err }

// refused is err with the broker's message, or nil where err is nil (a
// nil *Refused must never become a non-nil error).
func refused(err error, msg *string) error {
	if err == nil {
		return nil
	}
	r := &Refused{Err: err}
	if msg != nil {
		r.Message = *msg
	}
	return r
}
