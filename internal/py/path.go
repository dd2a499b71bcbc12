package py

import "strings"

// PathJoin is os.path.join(dir, name) on POSIX: an absolute name wins,
// otherwise one "/" is inserted unless dir already ends with one. Unlike
// filepath.Join it does not clean the path.
func PathJoin(dir, name string) string {
	switch {
	case strings.HasPrefix(name, "/"):
		return name
	case dir == "" || strings.HasSuffix(dir, "/"):
		return dir + name
	default:
		return dir + "/" + name
	}
}

// SplitExt is os.path.splitext on POSIX: the extension is the last "."
// of the final path element and what follows, unless only dots precede it
// there (".bashrc" has none).
func SplitExt(p string) (root, ext string) {
	base := p[strings.LastIndexByte(p, '/')+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 || strings.Trim(base[:dot], ".") == "" {
		return p, ""
	}
	cut := len(p) - len(base) + dot
	return p[:cut], p[cut:]
}
