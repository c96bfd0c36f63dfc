package logstore

import (
	"errors"
	"path"
)

// WriteFileAtomic makes data the content of dir/name durably: written and
// synced under a temporary name, renamed over name, and the directory
// synced. After a crash the file holds either its old content or data.
// Small records beside a log (a replica's vote fence, its membership
// checkpoint) are written this way.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	tmp := path.Join(dir, name+".tmp")
	if err := writeSynced(fsys, tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path.Join(dir, name)); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// ReadWholeFile returns the content of the file name.
func ReadWholeFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readWhole(f)
}

// ReadFileIfExists returns the content of the file name; ok is false, with
// no error, only if the file does not exist. Any other failure is an
// error: callers reading a record whose absence means "nothing to
// remember" (a vote fence, a tombstone, a membership checkpoint) must not
// take a failed read for that absence.
func ReadFileIfExists(fsys FS, name string) (b []byte, ok bool, err error) {
	b, err = ReadWholeFile(fsys, name)
	if errors.Is(err, ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}
