package runtime

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/floe-broker/floe/node/sasl"
)

// keySetFile is a JSON Web Key Set read from a file and reloaded when the
// file changes (an identity provider rotating its signing keys).
type keySetFile struct {
	path string
	w    *watchedFiles

	mu  sync.RWMutex
	set *jose.JSONWebKeySet
}

func newKeySetFile(path string, log *slog.Logger, checkEvery time.Duration) (*keySetFile, error) {
	if checkEvery <= 0 {
		checkEvery = certReloadEvery
	}
	k := &keySetFile{path: path}
	k.w = &watchedFiles{paths: []string{path}, checkEvery: checkEvery, log: log, what: "JWKS (" + path + ")", load: k.load}
	if err := k.w.init(); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *keySetFile) load() error {
	data, err := os.ReadFile(k.path)
	if err != nil {
		return err
	}
	set, err := sasl.ParseKeySet(data)
	if err != nil {
		return fmt.Errorf("%s: %w", k.path, err)
	}
	k.mu.Lock()
	k.set = set
	k.mu.Unlock()
	return nil
}

// Keys returns the current key set.
func (k *keySetFile) Keys() *jose.JSONWebKeySet {
	k.w.check()
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.set
}
