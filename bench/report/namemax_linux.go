package report

import "syscall"

// defaultNameMax is NAME_MAX on Linux's filesystems (ext4, xfs, tmpfs).
const defaultNameMax = 255

// NameMax is the longest file name, in bytes, the filesystem holding
// dir takes (statfs's f_namelen), NAME_MAX when it does not say.
func NameMax(dir string) int {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Namelen <= 0 {
		return defaultNameMax
	}
	return int(st.Namelen)
}
