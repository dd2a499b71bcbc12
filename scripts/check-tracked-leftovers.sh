#!/usr/bin/env bash
# check-tracked-leftovers.sh fails when git tracks what a merge, a patch or
# an editor leaves behind (*.orig, *.rej, *.bak, *.swp, *~): never part of
# the tree, easy to add by mistake with the file they sit beside. `make
# lint` runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

found=0
while IFS= read -r -d '' f; do
	case $f in
	*.orig | *.rej | *.bak | *.swp | *.swo | *~)
		echo "tracked leftover: $f (git rm it)" >&2
		found=1
		;;
	esac
done < <(git ls-files -z)
exit "$found"
