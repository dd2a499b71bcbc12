#!/usr/bin/env bash
# check-tracked-binaries.sh fails when a file git tracks is an executable
# binary (ELF, Mach-O or PE), as a command built in the top directory and
# added by mistake would be. Build output belongs in bin/, which .gitignore
# keeps out; `make lint` runs this.
set -euo pipefail
cd "$(dirname "$0")/.."

found=0
while IFS= read -r -d '' f; do
	[[ -f $f && ! -L $f ]] || continue
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case $magic in
	7f454c46) kind=ELF ;;
	feedface | feedfacf | cefaedfe | cffaedfe | cafebabe) kind=Mach-O ;;
	4d5a*) kind=PE ;;
	*) continue ;;
	esac
	echo "tracked $kind executable: $f (git rm --cached it; build into bin/)" >&2
	found=1
done < <(git ls-files -z)
exit "$found"
