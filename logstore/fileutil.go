package logstore

import "path"

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
